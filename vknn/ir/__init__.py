"""Compiler-side helpers shared by the dialects, the importer and the passes."""

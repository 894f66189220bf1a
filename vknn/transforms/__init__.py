"""Passes: one `ModulePass` per file. `registry.py` lists them all."""

"""Command-line tools: `vknn-opt` (pass driver) and `vknn` (compile / run)."""

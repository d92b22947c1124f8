"""The `cuda-agent` command: argument parsing and progress output only."""

"""Processes: the warm fork server, the candidate's process and its messages, confinement.

Imports nothing here: `process.fork_server` is imported before torch and must stay light.
"""

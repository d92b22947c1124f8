"""The static guard (sources read, never run) and the runtime guard (what a forward ran)."""

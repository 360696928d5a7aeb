"""The streaming benchmark (Omni-InteractScope): tasks, benchmark folders, protocol, adapters, judges, scoring, analysis, importers, collection."""

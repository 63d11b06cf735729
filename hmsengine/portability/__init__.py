"""Files and portability: file-backed memories, inspectors, JSONL export and import, snapshots."""

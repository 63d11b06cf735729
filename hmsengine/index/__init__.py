"""Index structures built from committed documents and read by queries: the text analyzer,
postings segments, vector blocks and filters. Nothing here writes to the journal."""

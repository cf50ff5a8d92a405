"""switchboard.store.sqlite: the embedded SQLite backend of the store interfaces."""

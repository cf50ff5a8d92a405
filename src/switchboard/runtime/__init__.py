"""switchboard.runtime: process-level leaves (the collector, the allocator, logging set-up,
rate-limited logs)."""

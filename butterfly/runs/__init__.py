"""Run directories: records, creating, appending, reading and resuming; playing conversations."""

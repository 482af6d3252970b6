"""flume's tests."""

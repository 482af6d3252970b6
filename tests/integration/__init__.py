"""Tests on real files, the codec and the CLI."""

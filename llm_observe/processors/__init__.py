"""Enrichment processors: pure, batch in, batch out (see base.Processor)."""

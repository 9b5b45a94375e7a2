"""The collector: pipeline assembly, exporters, settings and the serve command."""

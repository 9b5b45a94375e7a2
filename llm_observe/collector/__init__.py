"""The collector side: settings, assembly of pipeline and exporters (:mod:`.exporters`)."""

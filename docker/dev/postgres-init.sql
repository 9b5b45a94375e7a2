-- Dev compose (docker/compose.dev.yaml): the relational store with vector support (spec 1).
CREATE EXTENSION IF NOT EXISTS vector;

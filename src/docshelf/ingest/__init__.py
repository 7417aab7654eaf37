"""Ingest: how documents come in and are kept up to date.

sources (walk a folder) → prepare (read, fingerprint, parse, chunk, concepts,
embed) → writer (the one path into the store) ← sync (registered sources),
uploads (bytes sent over HTTP, run by the worker's stages), reindex (a new
generation), filing (inbox → library) and watch (live sync).
"""

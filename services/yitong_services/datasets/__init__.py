"""Versioned datasets: the content-addressed store, packs, manifests, commits, uploads, object
read grants, materialisation, GC and verify."""

"""Renderers: pure functions from a Diagnosis to text. They compute nothing new."""

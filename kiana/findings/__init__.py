"""Findings as every surface shows them, below the pipeline that makes them and the
report and CLI that render them: how they are counted, listed and folded
(:mod:`kiana.findings.counts`), and how one reads in words (:mod:`kiana.findings.wording`).
"""

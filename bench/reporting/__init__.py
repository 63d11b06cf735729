"""The pieces ``bench/report.py`` renders bench/REPORT.md with; nothing here runs a benchmark.

Modules, each importing only those listed before it: ``results`` (loading the JSON, reading its
shapes, provenance lines), ``markdown`` (number formatting, tables, the aims table), ``plots``
(matplotlib figures), ``sections`` (one renderer per benchmark), ``render`` (the whole report).
The package is imported with ``bench/`` on ``sys.path``, as ``report.py`` arranges, so
``_common`` resolves beside it.
"""

"""Presenting results: the run's terminal tables and live progress, `bench compare`'s
tables (terminal, markdown, CSV, JSON) and `bench report`'s offline page with report.md and
its figures. One row model (rows.py: RowKey, built from the option table) feeds them."""

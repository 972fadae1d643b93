"""Presenting results: the run's terminal tables and live progress, `bench compare`'s
tables (terminal, markdown, CSV, JSON) and `bench report`'s offline page with report.md and
its figures. From result files to the page: collect (load) -> compare (rows and columns)
-> tidy (the page's tables) -> page (the files) -> htmlpage (the page)."""

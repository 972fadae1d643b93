"""Command families beyond run/show: each module adds its subcommand(s) to the parser
with register(sub) and holds their code, so cli.py stays the front door."""

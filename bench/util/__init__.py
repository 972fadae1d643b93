"""What every room uses: one-line errors, safe text, byte sizes, atomic files, NUMA."""

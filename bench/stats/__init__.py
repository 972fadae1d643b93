"""Pure statistics over numbers: estimates and intervals, the verdict, sequential
intervals, change points, MLPerf-style scoring. Nothing here reads a file or a clock."""

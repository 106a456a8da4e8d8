"""The `axl-eval` command line: one module per subcommand, each exposing ``run(argv) -> int``."""

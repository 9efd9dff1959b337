"""Built-in engines, one package each, with the same file names in every package."""

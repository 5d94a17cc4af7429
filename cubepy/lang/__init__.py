"""What kernel authors write: dtypes, parameter annotations, builtins and strategies."""

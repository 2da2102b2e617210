"""What instrumented programs import at run time. Standard library only: no third-party imports, ever."""

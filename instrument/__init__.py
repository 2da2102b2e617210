"""Source rewriting: turn a program into one that counts its own loops, branches, calls, handlers and values."""

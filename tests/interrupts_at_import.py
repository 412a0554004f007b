"""An agent file whose import raises KeyboardInterrupt (tests/test_agent_failures.py)."""

raise KeyboardInterrupt

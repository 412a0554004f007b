"""An agent file whose import calls sys.exit(5) (tests/test_agent_failures.py)."""

import sys

sys.exit(5)


class Never:
    def act(self, observation, action_mask):
        return 0

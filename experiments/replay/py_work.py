"""The pure-Python work of the host-speed gauge (placement_probe.py's loop) and of
python_call_cost.py's `py` blocks: attribute and dict work, no driver call."""


class Obj:
    def __init__(self):
        self.a, self.d = 1, {}

    def f(self, i):
        self.d[i & 63] = self.a + i
        return self.d.get(i & 31, 0)

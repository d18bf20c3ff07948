"""Reference for csrc/slocore/baselines/power_of_two.h: the power of two choices with
SplitMix64 samples, placing a poll's queue in arrival order like PushPolicy."""

from __future__ import annotations

MASK = (1 << 64) - 1


def splitmix64(state: int) -> tuple[int, int]:
    """(new state, output) of SplitMix64."""
    state = (state + 0x9E3779B97F4A7C15) & MASK
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return state, z ^ (z >> 31)


class PowerOfTwo:
    """Push policy: requests queue in arrival order; each poll places them one by one."""

    def __init__(self, seed: int = 0):
        self.state, self.queue = seed, []

    def submit(self, r):
        self.queue.append(r)

    def pending(self) -> int:
        return len(self.queue)

    def poll(self, views) -> list[tuple[int, int]]:
        placed: dict[int, int] = {}
        out = []
        while self.queue:
            ok = [i for i, v in enumerate(views) if v.accepting]
            if not ok:
                break
            if len(ok) == 1:
                pick = ok[0]
            else:
                self.state, x = splitmix64(self.state)
                self.state, y = splitmix64(self.state)
                a, b = x % len(ok), y % (len(ok) - 1)
                b += b >= a

                def load(i):
                    return len(views[i].running) + len(views[i].waiting) + placed.get(views[i].id, 0)

                pick = ok[b] if load(ok[b]) < load(ok[a]) else ok[a]
            r = self.queue.pop(0)
            placed[views[pick].id] = placed.get(views[pick].id, 0) + 1
            out.append((r.id, views[pick].id))
        return out

#!/usr/bin/env python3
"""Print the shipped table plus N copies of the worked example (docs/architecture.md), each
with its own bound-1 counter, fact and continue reason (each retry's guard also requires that no
earlier copy's retry is enabled, so the guards stay exclusive and covering): `python3 benches/audit/extra_counters.py 10 > /tmp/t10.toml`,
then `agentloop audit --table /tmp/t10.toml`. Run from the repository root."""
import re,sys
src=open('transitions/loop.toml').read()
def replace_once(text, old, new):
    assert text.count(old) == 1, f'expected once in the table: {old!r}'
    return text.replace(old, new)

def end_turn_guard(text):
    """The guard of `consume.end_turn` as the table has it now."""
    m=re.search(r'id = "consume\.end_turn"\n(?:[^\[\n]*\n)*?guard = "([^"\n]*)"', text)
    assert m, 'consume.end_turn has a guard'
    return m.group(1)

def example(names):
    t=src
    base=end_turn_guard(t)
    extra=" && ".join(f"!({f} && {c}_left)" for f,c in names)
    t=replace_once(t, f'guard = "{base}"\n', f'guard = "{base} && {extra}"\n')
    t=replace_once(t, '  "turns",\n', '  "turns",\n'+"".join(f'  "{c}",\n' for f,c in names))
    for f,c in names:
        # The first copy whose fact holds with its counter left wins, so the guards stay
        # exclusive and covering.
        earlier=names[:names.index((f,c))]
        others=" && ".join(f"!({g} && {d}_left)" for g,d in earlier)
        guard=f"{base} && {f} && {c}_left" + (f" && {others}" if others else "")
        t+=f'''
[[reason]]
name = "{c}_retry"
kind = "continue"
doc = "x"

[[fact]]
name = "{f}"
doc = "x"

[[counter]]
name = "{c}"
bound = 1
doc = "x"

[[edge]]
id = "consume.{c}_retry"
from = "Consume"
on = "message_complete"
guard = "{guard}"
to = "Prepare"
status = "x"
continue = "{c}_retry"
consumes = ["{c}"]
resets = ["retries"]
doc = "x"
'''
    return t
n=int(sys.argv[1])
names=[(f"refused{k}", f"refusals{k}") for k in range(n)]
print(example(names))

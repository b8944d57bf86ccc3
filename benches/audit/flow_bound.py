#!/usr/bin/env python3
"""The worst case as a linear program (implicit path enumeration, as WCET tools bound loops):
maximise the calls over edge counts subject to flow conservation per leaf state and, per
counter, consumptions <= value at start + bound x resets. The prototype of src/audit/flow.rs, kept
as an independent cross-check with another solver (needs scipy; it keeps flow conservation as
equalities, the engine as "no leaf left more often than entered", which gives the same optima here):
`python3 benches/audit/flow_bound.py transitions/loop.toml` prints (per turn, per run) x
(excluding, including re-sends)."""
import tomllib,sys
from scipy.optimize import linprog
t=tomllib.load(open(sys.argv[1],'rb'))
states={s['name']:s for s in t['state']}
def anc(n):
    out=[]
    while n: out.append(n); n=states[n].get('parent')
    return out
leaves=[n for n,s in states.items() if s.get('kind','leaf')=='leaf']
C={c['name']:c for c in t['counter']}
E=t['edge']
# variables: (edge index, leaf) for each leaf whose ancestry contains from
var=[]
for i,e in enumerate(E):
    for l in leaves:
        if e['from'] in anc(l): var.append((i,l))
def calls(e,excl):
    if e['to']!='Request': return 0
    if excl and 'continue' not in e and 'terminal' not in e and e.get('consumes'): return 0
    return 1
# A turn ends where a continue edge consumes the turn counter (the one `max_turns` sets):
# next_turn, and task_notification (a background subagent's report starts a turn).
TURNS=next((c['name'] for c in t['counter'] if c.get('option')=='max_turns'), None)
def starts_turn(e):
    if TURNS is None: return e.get('continue')=='next_turn'
    return 'continue' in e and TURNS in e.get('consumes',[])
def solve(excl, turn):
    n=len(var)
    Aeq=[];beq=[];Aub=[];bub=[]
    # per turn: the flow starts at the initial state, edges that start a turn are sinks, counters start at their bound
    for l in leaves:
        row=[0]*n
        for k,(i,src) in enumerate(var):
            e=E[i]
            if src==l: row[k]-=1
            if e['to']==l and not (turn and starts_turn(e)): row[k]+=1
        Aeq.append(row); beq.append(-1 if l==t['initial'] else 0)
    for c,cd in C.items():
        row=[0]*n
        for k,(i,src) in enumerate(var):
            e=E[i]
            if c in e.get('consumes',[]): row[k]+=1
            if c in e.get('resets',[]) and not (turn and starts_turn(e)): row[k]-=cd['bound']
        init=cd['bound'] if turn else cd['bound']-cd.get('spent_at_start',0)
        Aub.append(row); bub.append(init)
    cost=[-calls(E[i],excl) for i,_ in var]
    r=linprog(cost,A_ub=Aub,b_ub=bub,A_eq=Aeq,b_eq=beq,bounds=(0,None),method='highs')
    return (-r.fun if r.status == 0 else None), r.status
for turn in (True,False):
    print('turn' if turn else 'run', solve(True,turn), solve(False,turn))

#!/usr/bin/env python3
"""Reports import cycles between the module files of a Rust crate's src/ directory.

Each file is one node. An edge A -> B when A names a path (a `use`, a re-export, or an
inline `crate::`/`super::`/`self::`/child-module path) that resolves to B's module: the
longest module prefix of the path that is a file of the crate. `mod x;` declarations are
not edges, nor are visibilities (`pub(in crate::x)`); `#[cfg(test)]` inline modules are left
out (they only see their own file)."""
import os, re, sys
from collections import defaultdict

def strip(src):
    out, i, n = [], 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith('//', i):
            j = src.find('\n', i); i = n if j < 0 else j
        elif src.startswith('/*', i):
            depth, i = 1, i + 2
            while i < n and depth:
                if src.startswith('/*', i): depth += 1; i += 2
                elif src.startswith('*/', i): depth -= 1; i += 2
                else: i += 1
        elif re.match(r'b?r#*"', src[i:i+10]) and (i == 0 or not (src[i-1].isalnum() or src[i-1] == '_')):
            m = re.match(r'b?r(#*)"', src[i:]); hashes = m.group(1)
            end = src.find('"' + hashes, i + len(m.group(0)))
            i = n if end < 0 else end + 1 + len(hashes); out.append('""')
        elif c == '"':
            i += 1
            while i < n and src[i] != '"':
                i += 2 if src[i] == '\\' else 1
            i += 1; out.append('""')
        elif c == "'" and re.match(r"'(\\.|[^\\'])'", src[i:i+4] + src[i+4:i+12]):
            m = re.match(r"'(\\[^']*|[^\\'])'", src[i:]); i += len(m.group(0)) if m else 1
        else:
            out.append(c); i += 1
    return ''.join(out)

def drop_test_modules(code):
    while True:
        m = re.search(r'#\[cfg\(test\)\]\s*(pub\s+)?mod\s+\w+\s*\{', code)
        if not m: return code
        i, depth = m.end(), 1
        while depth:
            depth += {'{': 1, '}': -1}.get(code[i], 0); i += 1
        code = code[:m.start()] + code[i:]

def expand(tree):
    """`a::{b, c::{d, self}}` -> [a::b, a::c::d, a::c]"""
    tree = re.sub(r'\s+', '', tree)
    m = re.match(r'^(.*?)\{(.*)\}$', tree)
    if not m:
        return [re.sub(r'\bas\w+$', '', tree)]
    prefix, inner = m.group(1), m.group(2)
    parts, depth, cur = [], 0, ''
    for ch in inner:
        if ch == ',' and depth == 0: parts.append(cur); cur = ''; continue
        depth += {'{': 1, '}': -1}.get(ch, 0); cur += ch
    if cur: parts.append(cur)
    res = []
    for p in parts:
        for e in expand(p):
            res.append(prefix.rstrip(':') if e == 'self' else prefix + e)
    return res

def main(src_dir):
    files = {}
    for root, _, names in os.walk(src_dir):
        for name in names:
            if not name.endswith('.rs'): continue
            path = os.path.join(root, name)
            rel = os.path.relpath(path, src_dir)[:-3].split(os.sep)
            if rel[-1] in ('mod', 'lib', 'main'): rel = rel[:-1]
            files[tuple(rel)] = os.path.relpath(path, src_dir)
    mods = set(files)
    edges = defaultdict(set)
    for mod, path in files.items():
        code = drop_test_modules(strip(open(os.path.join(src_dir, path)).read()))
        # A visibility (`pub(in crate::engine)`) names a module without importing it.
        code = re.sub(r'\bpub\s*\(\s*in\s+[\w:\s]+\)', 'pub', code)
        children = {c for c in re.findall(r'\bmod\s+(\w+)\s*;', code)}
        paths = []
        for u in re.findall(r'\buse\s+([^;]+);', code):
            paths += expand(u)
        paths += re.findall(r'\b(?:crate|super|self)(?:\s*::\s*\w+)+', code)
        if children:
            paths += re.findall(r'(?<![\w:])(?:%s)(?:\s*::\s*\w+)+' % '|'.join(children), code)
        for p in paths:
            segs = [s for s in re.split(r'\s*::\s*', p.strip()) if s]
            if not segs: continue
            if segs[0] == 'crate': base, rest = [], segs[1:]
            elif segs[0] in ('super', 'self'):
                base = list(mod)
                while segs and segs[0] in ('super', 'self'):
                    if segs.pop(0) == 'super': base = base[:-1]
                rest = segs
            elif segs[0] in children: base, rest = list(mod), segs
            else: continue
            full = base + rest
            target = max((full[:k] for k in range(len(full) + 1) if tuple(full[:k]) in mods), key=len)
            target = tuple(target)
            if target != mod:
                edges[mod].add(target)
    name = lambda m: '::'.join(m) or 'crate'
    # Tarjan's strongly connected components
    index, low, stack, on, sccs, counter = {}, {}, [], set(), [], [0]
    def visit(v):
        index[v] = low[v] = counter[0]; counter[0] += 1; stack.append(v); on.add(v)
        for w in sorted(edges[v]):
            if w not in index: visit(w); low[v] = min(low[v], low[w])
            elif w in on: low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop(); on.discard(w); comp.append(w)
                if w == v: break
            sccs.append(comp)
    sys.setrecursionlimit(10000)
    for v in sorted(mods):
        if v not in index: visit(v)
    cyclic = [c for c in sccs if len(c) > 1]
    if '-v' in sys.argv:
        for m in sorted(mods):
            print(f'{name(m):24} -> {", ".join(sorted(name(t) for t in edges[m]))}')
    if not cyclic:
        print(f'no import cycles among {len(mods)} modules')
        return 0
    for comp in cyclic:
        members = set(comp)
        print(f'cycle among {len(comp)} modules: {", ".join(sorted(name(m) for m in comp))}')
        for a in sorted(comp):
            for b in sorted(edges[a] & members):
                # shortest path back from b to a, to show one cycle through this edge
                prev, todo = {b: None}, [b]
                while todo and a not in prev:
                    nxt = []
                    for x in todo:
                        for y in sorted(edges[x] & members):
                            if y not in prev: prev[y] = x; nxt.append(y)
                    todo = nxt
                back, x = [], a
                while x is not None: back.append(x); x = prev[x]
                print('   ', ' -> '.join(name(m) for m in [a] + back[::-1]))
    return 1

if __name__ == '__main__':
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 and not sys.argv[1].startswith('-') else 'src'))

# Reads hftbacktest .npz files as hftbacktest does and rebuilds each file's
# book from its local-flagged events, alone (as a backtest starting on that
# file would), comparing it with the books expected at given local times.
# Usage: hbt_check.py EXPECT.json, where EXPECT maps each file to a list of
# [local_ts, bids, asks] sorted by local_ts (levels [price, size], best
# first). Prints JSON: per file, its rows, the kind of its first event, the
# books compared and the first difference (null when none).
# Checks on the way what hftbacktest's loaders and validate_event_order
# check: the member name, the .npy version and 64-byte alignment, the event
# dtype, event kinds and flags, and the order of both processors' events.
import json
import math
import sys
import zipfile

import numpy as np

# hftbacktest's event_dtype (py-hftbacktest/hftbacktest/types.py).
EVENT_DTYPE = np.dtype(
    [('ev', 'u8'), ('exch_ts', 'i8'), ('local_ts', 'i8'), ('px', 'f8'), ('qty', 'f8'),
     ('order_id', 'u8'), ('ival', 'i8'), ('fval', 'f8')],
    align=True)
DEPTH, TRADE, CLEAR, SNAPSHOT = 1, 2, 3, 4
EXCH, LOCAL, BUY, SELL = 1 << 31, 1 << 30, 1 << 29, 1 << 28


def fail(path, msg):
    sys.exit(f"{path}: {msg}")


def check_file(path, expect):
    with zipfile.ZipFile(path) as z:
        if z.namelist() != ['data.npy']:
            fail(path, f"members {z.namelist()}")
        raw = z.read('data.npy')
    if raw[:8] != b'\x93NUMPY\x01\x00':
        fail(path, "not .npy version 1.0")
    hlen = int.from_bytes(raw[8:10], 'little')
    if (10 + hlen) % 64 != 0:
        fail(path, f"data at {10 + hlen}, not 64-byte aligned")
    data = np.load(path)['data']
    if data.dtype != EVENT_DTYPE or data.dtype.itemsize != 64 or data.ndim != 1:
        fail(path, f"dtype {data.dtype}")
    ev = data['ev']
    kinds = ev & 0xff
    if not np.isin(kinds, [DEPTH, TRADE, CLEAR, SNAPSHOT]).all():
        fail(path, f"kinds {sorted(set(kinds.tolist()))}")
    if ((ev & (EXCH | LOCAL)) == 0).any():
        fail(path, "an event for neither processor")
    if (data['order_id'] != 0).any() or (data['ival'] != 0).any() or (data['fval'] != 0).any():
        fail(path, "order_id/ival/fval set")
    exch = (ev & EXCH) == EXCH
    local = (ev & LOCAL) == LOCAL
    # validate_event_order
    if (np.diff(data['exch_ts'][exch]) < 0).any():
        fail(path, "exchange events are out of order")
    if (np.diff(data['local_ts'][local]) < 0).any():
        fail(path, "local events are out of order")
    # Each processor sees every event once: the same events, in its order.
    strip = ~np.uint64(EXCH | LOCAL)
    key = lambda a: sorted(zip((a['ev'] & strip).tolist(), a['exch_ts'].tolist(), a['local_ts'].tolist(),
                               [repr(x) for x in a['px'].tolist()], a['qty'].tolist()))
    if key(data[exch]) != key(data[local]):
        fail(path, "exchange and local events differ")

    bids, asks = {}, {}
    compared, mismatch, q = 0, None, 0
    rows = data[local]

    def compare(t):
        nonlocal compared, mismatch
        b = [list(x) for x in sorted(bids.items(), reverse=True)]
        a = [list(x) for x in sorted(asks.items())]
        _, wb, wa = expect[q]
        compared += 1
        if mismatch is None and (b != wb or a != wa):
            mismatch = {'local_ts': t, 'bids': b[:5], 'asks': a[:5], 'want_bids': wb[:5], 'want_asks': wa[:5]}

    # Books expected before the file's first event: it has none.
    while q < len(expect) and (len(rows) == 0 or expect[q][0] < int(rows[0]['local_ts'])):
        compare(expect[q][0])
        q += 1
    for i, r in enumerate(rows):
        e, px, qty = int(r['ev']), float(r['px']), float(r['qty'])
        kind = e & 0xff
        if kind == CLEAR:
            sides = []
            if e & BUY:
                sides.append((bids, True))
            elif e & SELL:
                sides.append((asks, False))
            else:
                sides = [(bids, True), (asks, False)]
            for book, is_bid in sides:
                if math.isfinite(px):  # hftbacktest clears from the best up to px
                    for p in [p for p in book if (p >= px if is_bid else p <= px)]:
                        del book[p]
                else:
                    book.clear()
        elif kind in (DEPTH, SNAPSHOT):
            book = bids if e & BUY else asks
            if qty == 0:
                book.pop(px, None)
            else:
                book[px] = qty
        if i + 1 == len(rows) or rows[i + 1]['local_ts'] != r['local_ts']:
            # The book as of every expected time up to the next event's.
            nxt = int(rows[i + 1]['local_ts']) if i + 1 < len(rows) else None
            while q < len(expect) and (nxt is None or expect[q][0] < nxt):
                compare(expect[q][0])
                q += 1
    first = int(data[0]['ev']) & 0xff if len(data) else 0
    return {'rows': int(len(data)), 'first_kind': first, 'compared': compared, 'mismatch': mismatch}


with open(sys.argv[1]) as f:
    expect = json.load(f)
out = {}
for p in sorted(expect):
    out[p] = check_file(p, expect[p])
json.dump(out, sys.stdout)

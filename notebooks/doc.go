// Package notebooks holds the Jupyter notebooks a researcher starts from, and
// the test that executes them: the Go code here is only that test. Each
// notebook reads CSV exports of the shipped samples (what `replay export`
// writes), saves its figures as PNG files to $TAPEDECK_FIGURES, and reads its
// inputs from $TAPEDECK_EXPORTS:
//
//   - polymarket_spread_mid_depth.ipynb: spread, mid and top-5 depth of the
//     YES and NO books of one Polymarket market, side by side.
//   - hyperliquid_depth_heatmap.ipynb: a depth heatmap of a Hyperliquid coin
//     with its trades overlaid.
//   - data_quality_timeline.ipynb: book validity, crossed books, hash checks
//     and connection events (disconnects, reconnects, gaps) over time.
//   - backtest_equity_fills.ipynb: a `replay backtest` run of the example
//     market maker (its --out tables, bt/): fills over the top of the book,
//     inventory, equity and drawdown.
//
// The test needs Debian's jupyter-nbconvert, python3-ipykernel, python3-pandas
// and python3-matplotlib (scripts/test-deps.sh installs them) and skips with a
// message when jupyter is missing.
package notebooks

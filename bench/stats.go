package bench

import (
	"math"
	"slices"
)

// Median returns the median of xs (the mean of the middle two for an even
// count), or NaN for none. xs is not modified.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Sorted(slices.Values(xs))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Percentile returns the nearest-rank q-quantile (0 < q ≤ 1) of xs, or NaN
// for none: with five runs, p95 is the largest.
func Percentile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Sorted(slices.Values(xs))
	k := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(0, min(k, len(s)-1))]
}

// medianBand returns a distribution-free confidence interval for the median
// of xs at level at least conf, from order statistics: cutting c samples from
// each end leaves [x(c+1), x(n−c)], which covers the median with probability
// 1 − 2·P(Binomial(n, ½) ≤ c); it cuts the largest c that keeps conf. ok is
// false when even the full range [min, max] covers the median with less
// than conf (fewer than 6 samples at 95%): such a band proves nothing.
func medianBand(xs []float64, conf float64) (lo, hi float64, ok bool) {
	s := slices.Sorted(slices.Values(xs))
	n := len(s)
	alpha := (1 - conf) / 2
	if n == 0 || binomPMF(n, 0) > alpha {
		if n == 0 {
			return 0, 0, false
		}
		return s[0], s[n-1], false
	}
	k := 0 // number of order statistics cut from each end
	cum := 0.0
	for j := 0; j < (n+1)/2; j++ {
		cum += binomPMF(n, j) // P(X ≤ j)
		if cum > alpha {
			break
		}
		k = j
	}
	return s[k], s[n-1-k], true
}

// binomPMF is P(X = j) for X ~ Binomial(n, ½).
func binomPMF(n, j int) float64 {
	lg := func(x int) float64 { v, _ := math.Lgamma(float64(x + 1)); return v }
	return math.Exp(lg(n) - lg(j) - lg(n-j) - float64(n)*math.Ln2)
}

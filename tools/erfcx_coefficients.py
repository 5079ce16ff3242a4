# The coefficients of ls_erfcx_nonneg (inst/include/lockstep/math/normal_tails.hpp),
# for reference: not run by the build. With q = (t - 2) / (t + 2), the function
# (1 + 2t) exp(t^2) erfc(t) of q in [-1, 1] (Shepherd and Laframboise, Math.
# Comp. 36, 1981) is expanded in a Chebyshev series at 200 Chebyshev nodes in
# 50-digit arithmetic (mpmath, Debian's python3-mpmath), truncated after degree
# 30 (the coefficients after it are below 1e-20), and converted to the monomial
# basis, printed from the highest degree down as Horner's rule takes them.
#   python3 tools/erfcx_coefficients.py
import mpmath as mp

mp.mp.dps = 50
K = mp.mpf(2)
DEGREE = 30
NODES = 200


def f(q):
    if q == 1:
        return 2 / mp.sqrt(mp.pi)
    t = K * (1 + q) / (1 - q)
    return (1 + 2 * t) * mp.erfc(t) * mp.exp(t * t)


xs = [mp.cos(mp.pi * (k + mp.mpf(1) / 2) / NODES) for k in range(NODES)]
fs = [f(x) for x in xs]
cheb = []
for j in range(DEGREE + 1):
    s = sum(fs[k] * mp.cos(mp.pi * j * (k + mp.mpf(1) / 2) / NODES) for k in range(NODES))
    cheb.append(2 * s / NODES)
cheb[0] /= 2

# T_j in the monomial basis, by T_j = 2 q T_(j-1) - T_(j-2)
T = [[mp.mpf(1)], [mp.mpf(0), mp.mpf(1)]]
for j in range(2, DEGREE + 1):
    t = [mp.mpf(0)] * (j + 1)
    for i, v in enumerate(T[j - 1]):
        t[i + 1] += 2 * v
    for i, v in enumerate(T[j - 2]):
        t[i] -= v
    T.append(t)
mono = [mp.mpf(0)] * (DEGREE + 1)
for j in range(DEGREE + 1):
    for i, v in enumerate(T[j]):
        mono[i] += cheb[j] * v

print("sum of |coefficients|:", mp.nstr(sum(abs(c) for c in mono), 6))
for c in reversed(mono):
    print(repr(float(c)))

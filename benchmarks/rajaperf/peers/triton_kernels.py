"""The Triton peer's kernels, imported only when Triton is used: each kernel loop as a program over
a block of 256 iterates; LTIMES one program per (z, g) over a masked 32 x 64 tile of (m, d). Scalar
floats are annotated ``tl.float64``: Triton passes a Python float as fp32 otherwise."""

import triton
import triton.language as tl


@triton.jit
def del_dot_vec_2d(rz_ptr, x_ptr, y_ptr, fx_ptr, fy_ptr, div_ptr, jp, half: tl.float64, ptiny: tl.float64, n,
                   BLOCK: tl.constexpr):
    ii = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = ii < n
    i = tl.load(rz_ptr + ii, mask=mask, other=0)
    x1, x2 = tl.load(x_ptr + i + 1, mask=mask), tl.load(x_ptr + i + 1 + jp, mask=mask)
    x3, x4 = tl.load(x_ptr + i + jp, mask=mask), tl.load(x_ptr + i, mask=mask)
    y1, y2 = tl.load(y_ptr + i + 1, mask=mask), tl.load(y_ptr + i + 1 + jp, mask=mask)
    y3, y4 = tl.load(y_ptr + i + jp, mask=mask), tl.load(y_ptr + i, mask=mask)
    fx1, fx2 = tl.load(fx_ptr + i + 1, mask=mask), tl.load(fx_ptr + i + 1 + jp, mask=mask)
    fx3, fx4 = tl.load(fx_ptr + i + jp, mask=mask), tl.load(fx_ptr + i, mask=mask)
    fy1, fy2 = tl.load(fy_ptr + i + 1, mask=mask), tl.load(fy_ptr + i + 1 + jp, mask=mask)
    fy3, fy4 = tl.load(fy_ptr + i + jp, mask=mask), tl.load(fy_ptr + i, mask=mask)
    xi, xj = half * (x1 + x2 - x3 - x4), half * (x2 + x3 - x4 - x1)
    yi, yj = half * (y1 + y2 - y3 - y4), half * (y2 + y3 - y4 - y1)
    fxi, fxj = half * (fx1 + fx2 - fx3 - fx4), half * (fx2 + fx3 - fx4 - fx1)
    fyi, fyj = half * (fy1 + fy2 - fy3 - fy4), half * (fy2 + fy3 - fy4 - fy1)
    rarea = 1.0 / (xi * yj - xj * yi + ptiny)
    div = rarea * (fxi * yj - fxj * yi) + rarea * (fyj * xi - fyi * xj) + \
        (fy1 + fy2 + fy3 + fy4) / (y1 + y2 + y3 + y4)
    tl.store(div_ptr + i, div, mask=mask)

@triton.jit
def ssc_fix(s):
    return tl.where(s <= 0.1111111e-36, 0.3333333e-18, tl.sqrt(tl.maximum(s, 0.0)))

@triton.jit
def energy1(e_new, e_old, delvc, p_old, q_old, work, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    v = tl.load(e_old + i, mask=m) - 0.5 * tl.load(delvc + i, mask=m) * (
        tl.load(p_old + i, mask=m) + tl.load(q_old + i, mask=m)) + 0.5 * tl.load(work + i, mask=m)
    tl.store(e_new + i, v, mask=m)

@triton.jit
def energy2(q_new, delvc, comp_half_step, pbvc, e_new, bvc, p_half_step, ql_old, qq_old, rho0: tl.float64, n,
            BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    vhalf = 1.0 / (1.0 + tl.load(comp_half_step + i, mask=m))
    ssc = ssc_fix((tl.load(pbvc + i, mask=m) * tl.load(e_new + i, mask=m)
                   + vhalf * vhalf * tl.load(bvc + i, mask=m) * tl.load(p_half_step + i, mask=m)) / rho0)
    q = ssc * tl.load(ql_old + i, mask=m) + tl.load(qq_old + i, mask=m)
    tl.store(q_new + i, tl.where(tl.load(delvc + i, mask=m) > 0.0, 0.0, q), mask=m)

@triton.jit
def energy3(e_new, delvc, p_old, q_old, p_half_step, q_new, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    v = tl.load(e_new + i, mask=m) + 0.5 * tl.load(delvc + i, mask=m) * (
        3.0 * (tl.load(p_old + i, mask=m) + tl.load(q_old + i, mask=m))
        - 4.0 * (tl.load(p_half_step + i, mask=m) + tl.load(q_new + i, mask=m)))
    tl.store(e_new + i, v, mask=m)

@triton.jit
def energy4(e_new, work, e_cut: tl.float64, emin: tl.float64, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    e = tl.load(e_new + i, mask=m) + 0.5 * tl.load(work + i, mask=m)
    e = tl.where(tl.abs(e) < e_cut, 0.0, e)
    tl.store(e_new + i, tl.where(e < emin, emin, e), mask=m)

@triton.jit
def energy5(e_new, delvc, pbvc, vnewc, bvc, p_new, ql_old, qq_old, p_old, q_old, p_half_step, q_new,
            rho0: tl.float64, e_cut: tl.float64, emin: tl.float64, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    d, en, vn, pn = tl.load(delvc + i, mask=m), tl.load(e_new + i, mask=m), tl.load(vnewc + i, mask=m), \
        tl.load(p_new + i, mask=m)
    ssc = ssc_fix((tl.load(pbvc + i, mask=m) * en + vn * vn * tl.load(bvc + i, mask=m) * pn) / rho0)
    q_tilde = tl.where(d > 0.0, 0.0, ssc * tl.load(ql_old + i, mask=m) + tl.load(qq_old + i, mask=m))
    e = en - (7.0 * (tl.load(p_old + i, mask=m) + tl.load(q_old + i, mask=m))
              - 8.0 * (tl.load(p_half_step + i, mask=m) + tl.load(q_new + i, mask=m)) + (pn + q_tilde)) * d / 6.0
    e = tl.where(tl.abs(e) < e_cut, 0.0, e)
    tl.store(e_new + i, tl.where(e < emin, emin, e), mask=m)

@triton.jit
def energy6(q_new, delvc, pbvc, e_new, vnewc, bvc, p_new, ql_old, qq_old, rho0: tl.float64, q_cut: tl.float64, n,
            BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    vn = tl.load(vnewc + i, mask=m)
    ssc = ssc_fix((tl.load(pbvc + i, mask=m) * tl.load(e_new + i, mask=m)
                   + vn * vn * tl.load(bvc + i, mask=m) * tl.load(p_new + i, mask=m)) / rho0)
    q = ssc * tl.load(ql_old + i, mask=m) + tl.load(qq_old + i, mask=m)
    q = tl.where(tl.abs(q) < q_cut, 0.0, q)
    tl.store(q_new + i, q, mask=m & (tl.load(delvc + i, mask=m) <= 0.0))

@triton.jit
def fir(out, inp, coeff, n, TAPS: tl.constexpr, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    s = tl.zeros((BLOCK,), dtype=tl.float64)
    for j in tl.static_range(TAPS):
        s += tl.load(coeff + j) * tl.load(inp + i + j, mask=m)
    tl.store(out + i, s, mask=m)

@triton.jit
def ltimes(phi, ell, psi, num_m, num_g, ND: tl.constexpr, MB: tl.constexpr):
    g = tl.program_id(0)
    z = tl.program_id(1)
    mm = tl.arange(0, MB)
    d = tl.arange(0, ND)
    mmask = mm < num_m
    e = tl.load(ell + mm[:, None] * ND + d[None, :], mask=mmask[:, None], other=0.0)
    row = tl.load(psi + (z * num_g + g) * ND + d)
    s = tl.sum(e * row[None, :], axis=1)
    target = phi + (z * num_g + g) * num_m + mm
    tl.store(target, tl.load(target, mask=mmask) + s, mask=mmask)

@triton.jit
def pressure1(bvc, compression, cls: tl.float64, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    tl.store(bvc + i, cls * (tl.load(compression + i, mask=m) + 1.0), mask=m)

@triton.jit
def pressure2(p_new, bvc, e_old, vnewc, p_cut: tl.float64, eosvmax: tl.float64, pmin: tl.float64, n,
              BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    p = tl.load(bvc + i, mask=m) * tl.load(e_old + i, mask=m)
    p = tl.where(tl.abs(p) < p_cut, 0.0, p)
    p = tl.where(tl.load(vnewc + i, mask=m) >= eosvmax, 0.0, p)
    tl.store(p_new + i, tl.where(p < pmin, pmin, p), mask=m)

@triton.jit
def vol3d(x, y, z, vol, jp, kp, vnormq: tl.float64, ibegin, iend, BLOCK: tl.constexpr):
    i = ibegin + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < iend
    x0, x1, x2, x3 = tl.load(x + i, mask=m), tl.load(x + i + 1, mask=m), tl.load(x + i + jp, mask=m), \
        tl.load(x + i + 1 + jp, mask=m)
    x4, x5, x6, x7 = tl.load(x + i + kp, mask=m), tl.load(x + i + 1 + kp, mask=m), \
        tl.load(x + i + jp + kp, mask=m), tl.load(x + i + 1 + jp + kp, mask=m)
    y0, y1, y2, y3 = tl.load(y + i, mask=m), tl.load(y + i + 1, mask=m), tl.load(y + i + jp, mask=m), \
        tl.load(y + i + 1 + jp, mask=m)
    y4, y5, y6, y7 = tl.load(y + i + kp, mask=m), tl.load(y + i + 1 + kp, mask=m), \
        tl.load(y + i + jp + kp, mask=m), tl.load(y + i + 1 + jp + kp, mask=m)
    z0, z1, z2, z3 = tl.load(z + i, mask=m), tl.load(z + i + 1, mask=m), tl.load(z + i + jp, mask=m), \
        tl.load(z + i + 1 + jp, mask=m)
    z4, z5, z6, z7 = tl.load(z + i + kp, mask=m), tl.load(z + i + 1 + kp, mask=m), \
        tl.load(z + i + jp + kp, mask=m), tl.load(z + i + 1 + jp + kp, mask=m)
    x71, x72, x74, x30, x50, x60 = x7 - x1, x7 - x2, x7 - x4, x3 - x0, x5 - x0, x6 - x0
    y71, y72, y74, y30, y50, y60 = y7 - y1, y7 - y2, y7 - y4, y3 - y0, y5 - y0, y6 - y0
    z71, z72, z74, z30, z50, z60 = z7 - z1, z7 - z2, z7 - z4, z3 - z0, z5 - z0, z6 - z0
    v = (x71 + x60) * (y72 * z30 - z72 * y30) + (y71 + y60) * (z72 * x30 - x72 * z30) + \
        (z71 + z60) * (x72 * y30 - y72 * x30)
    v += (x72 + x50) * (y74 * z60 - z74 * y60) + (y72 + y50) * (z74 * x60 - x74 * z60) + \
        (z72 + z50) * (x74 * y60 - y74 * x60)
    v += (x74 + x30) * (y71 * z50 - z71 * y50) + (y74 + y30) * (z71 * x50 - x71 * z50) + \
        (z74 + z30) * (x71 * y50 - y71 * x50)
    tl.store(vol + i, v * vnormq, mask=m)


@triton.jit
def matvec_3d(b, x, real_zones, dbl, dbc, dbr, dcl, dcc, dcr, dfl, dfc, dfr, cbl, cbc, cbr, ccl, ccc, jp, kp, n,
              BLOCK: tl.constexpr):
    ii = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = ii < n
    i = tl.load(real_zones + ii, mask=m, other=0)
    s = tl.load(dbl + i, mask=m) * tl.load(x + i - kp - jp - 1, mask=m)
    s += tl.load(dbc + i, mask=m) * tl.load(x + i - kp - jp, mask=m)
    s += tl.load(dbr + i, mask=m) * tl.load(x + i - kp - jp + 1, mask=m)
    s += tl.load(dcl + i, mask=m) * tl.load(x + i - kp - 1, mask=m)
    s += tl.load(dcc + i, mask=m) * tl.load(x + i - kp, mask=m)
    s += tl.load(dcr + i, mask=m) * tl.load(x + i - kp + 1, mask=m)
    s += tl.load(dfl + i, mask=m) * tl.load(x + i - kp + jp - 1, mask=m)
    s += tl.load(dfc + i, mask=m) * tl.load(x + i - kp + jp, mask=m)
    s += tl.load(dfr + i, mask=m) * tl.load(x + i - kp + jp + 1, mask=m)
    s += tl.load(cbl + i, mask=m) * tl.load(x + i - jp - 1, mask=m)
    s += tl.load(cbc + i, mask=m) * tl.load(x + i - jp, mask=m)
    s += tl.load(cbr + i, mask=m) * tl.load(x + i - jp + 1, mask=m)
    s += tl.load(ccl + i, mask=m) * tl.load(x + i - 1, mask=m)
    s += tl.load(ccc + i, mask=m) * tl.load(x + i, mask=m)
    s += tl.load(ccl + i + 1, mask=m) * tl.load(x + i + 1, mask=m)
    s += tl.load(cbr + i - 1 + jp, mask=m) * tl.load(x + i + jp - 1, mask=m)
    s += tl.load(cbc + i + jp, mask=m) * tl.load(x + i + jp, mask=m)
    s += tl.load(cbl + i + 1 + jp, mask=m) * tl.load(x + i + jp + 1, mask=m)
    s += tl.load(dfr + i - 1 - jp + kp, mask=m) * tl.load(x + i + kp - jp - 1, mask=m)
    s += tl.load(dfc + i - jp + kp, mask=m) * tl.load(x + i + kp - jp, mask=m)
    s += tl.load(dfl + i + 1 - jp + kp, mask=m) * tl.load(x + i + kp - jp + 1, mask=m)
    s += tl.load(dcr + i - 1 + kp, mask=m) * tl.load(x + i + kp - 1, mask=m)
    s += tl.load(dcc + i + kp, mask=m) * tl.load(x + i + kp, mask=m)
    s += tl.load(dcl + i + 1 + kp, mask=m) * tl.load(x + i + kp + 1, mask=m)
    s += tl.load(dbr + i - 1 + jp + kp, mask=m) * tl.load(x + i + kp + jp - 1, mask=m)
    s += tl.load(dbc + i + jp + kp, mask=m) * tl.load(x + i + kp + jp, mask=m)
    s += tl.load(dbl + i + 1 + jp + kp, mask=m) * tl.load(x + i + kp + jp + 1, mask=m)
    tl.store(b + i, s, mask=m)


KERNELS = dict(del_dot_vec_2d=del_dot_vec_2d, energy=(energy1, energy2, energy3, energy4, energy5, energy6),
               fir=fir, ltimes=ltimes, pressure=(pressure1, pressure2), vol3d=vol3d, matvec_3d=matvec_3d)

/* The seven RAJAPerf apps kernels in C with OpenMP, written as RAJAPerf's Base_OpenMP variants:
   one parallel loop per kernel loop, static schedule. Built at run time with
   gcc -O3 -march=native -fopenmp and called through ctypes. */
#include <math.h>

typedef long Index;

void del_dot_vec_2d(const Index* restrict real_zones, const double* restrict x, const double* restrict y,
                    const double* restrict fx, const double* restrict fy, double* restrict div, Index jp,
                    double half, double ptiny, Index n) {
    #pragma omp parallel for schedule(static)
    for (Index ii = 0; ii < n; ++ii) {
        Index i = real_zones[ii];
        double x1 = x[i + 1], x2 = x[i + 1 + jp], x3 = x[i + jp], x4 = x[i];
        double y1 = y[i + 1], y2 = y[i + 1 + jp], y3 = y[i + jp], y4 = y[i];
        double fx1 = fx[i + 1], fx2 = fx[i + 1 + jp], fx3 = fx[i + jp], fx4 = fx[i];
        double fy1 = fy[i + 1], fy2 = fy[i + 1 + jp], fy3 = fy[i + jp], fy4 = fy[i];
        double xi = half * (x1 + x2 - x3 - x4), xj = half * (x2 + x3 - x4 - x1);
        double yi = half * (y1 + y2 - y3 - y4), yj = half * (y2 + y3 - y4 - y1);
        double fxi = half * (fx1 + fx2 - fx3 - fx4), fxj = half * (fx2 + fx3 - fx4 - fx1);
        double fyi = half * (fy1 + fy2 - fy3 - fy4), fyj = half * (fy2 + fy3 - fy4 - fy1);
        double rarea = 1.0 / (xi * yj - xj * yi + ptiny);
        double dfxdx = rarea * (fxi * yj - fxj * yi);
        double dfydy = rarea * (fyj * xi - fyi * xj);
        double affine = (fy1 + fy2 + fy3 + fy4) / (y1 + y2 + y3 + y4);
        div[i] = dfxdx + dfydy + affine;
    }
}

static inline double ssc_fix(double s) { return s <= 0.1111111e-36 ? 0.3333333e-18 : sqrt(s); }

void energy(double* restrict e_new, const double* restrict e_old, const double* restrict delvc,
            const double* restrict p_new, const double* restrict p_old, double* restrict q_new,
            const double* restrict q_old, const double* restrict work, const double* restrict comp_half_step,
            const double* restrict p_half_step, const double* restrict bvc, const double* restrict pbvc,
            const double* restrict ql_old, const double* restrict qq_old, const double* restrict vnewc,
            double rho0, double e_cut, double emin, double q_cut, Index n) {
    #pragma omp parallel
    {
        #pragma omp for schedule(static)
        for (Index i = 0; i < n; ++i)
            e_new[i] = e_old[i] - 0.5 * delvc[i] * (p_old[i] + q_old[i]) + 0.5 * work[i];
        #pragma omp for schedule(static)
        for (Index i = 0; i < n; ++i) {
            if (delvc[i] > 0.0) {
                q_new[i] = 0.0;
            } else {
                double vhalf = 1.0 / (1.0 + comp_half_step[i]);
                double ssc = ssc_fix((pbvc[i] * e_new[i] + vhalf * vhalf * bvc[i] * p_half_step[i]) / rho0);
                q_new[i] = ssc * ql_old[i] + qq_old[i];
            }
        }
        #pragma omp for schedule(static)
        for (Index i = 0; i < n; ++i)
            e_new[i] = e_new[i] + 0.5 * delvc[i] * (3.0 * (p_old[i] + q_old[i]) - 4.0 * (p_half_step[i] + q_new[i]));
        #pragma omp for schedule(static)
        for (Index i = 0; i < n; ++i) {
            e_new[i] += 0.5 * work[i];
            if (fabs(e_new[i]) < e_cut) e_new[i] = 0.0;
            if (e_new[i] < emin) e_new[i] = emin;
        }
        #pragma omp for schedule(static)
        for (Index i = 0; i < n; ++i) {
            double q_tilde = 0.0;
            if (delvc[i] <= 0.0) {
                double ssc = ssc_fix((pbvc[i] * e_new[i] + vnewc[i] * vnewc[i] * bvc[i] * p_new[i]) / rho0);
                q_tilde = ssc * ql_old[i] + qq_old[i];
            }
            e_new[i] = e_new[i] - (7.0 * (p_old[i] + q_old[i]) - 8.0 * (p_half_step[i] + q_new[i])
                                   + (p_new[i] + q_tilde)) * delvc[i] / 6.0;
            if (fabs(e_new[i]) < e_cut) e_new[i] = 0.0;
            if (e_new[i] < emin) e_new[i] = emin;
        }
        #pragma omp for schedule(static)
        for (Index i = 0; i < n; ++i) {
            if (delvc[i] <= 0.0) {
                double ssc = ssc_fix((pbvc[i] * e_new[i] + vnewc[i] * vnewc[i] * bvc[i] * p_new[i]) / rho0);
                q_new[i] = ssc * ql_old[i] + qq_old[i];
                if (fabs(q_new[i]) < q_cut) q_new[i] = 0.0;
            }
        }
    }
}

void fir(double* restrict out, const double* restrict in, const double* restrict coeff, Index coefflen, Index n) {
    #pragma omp parallel for schedule(static)
    for (Index i = 0; i < n; ++i) {
        double sum = 0.0;
        for (Index j = 0; j < coefflen; ++j) sum += coeff[j] * in[i + j];
        out[i] = sum;
    }
}

void ltimes(double* restrict phi, const double* restrict ell, const double* restrict psi, Index num_d,
            Index num_g, Index num_m, Index num_z) {
    #pragma omp parallel for schedule(static)
    for (Index z = 0; z < num_z; ++z)
        for (Index g = 0; g < num_g; ++g)
            for (Index m = 0; m < num_m; ++m)
                for (Index d = 0; d < num_d; ++d)
                    phi[m + num_m * (g + num_g * z)] += ell[d + num_d * m] * psi[d + num_d * (g + num_g * z)];
}

/* coef[27]: the 27 coefficient views (aliases already shifted); xo[27]: the x offsets; C sum order. */
void matvec_3d(double* restrict b, const double* restrict x, const Index* restrict real_zones,
               const double* const* coef, const Index* xo, Index n) {
    #pragma omp parallel for schedule(static)
    for (Index ii = 0; ii < n; ++ii) {
        Index i = real_zones[ii];
#define T(k) (coef[k][i] * x[i + xo[k]])
        double s = T(0);
        s += T(1);
        s += T(2);
        s += T(3);
        s += T(4);
        s += T(5);
        s += T(6);
        s += T(7);
        s += T(8);
        s += T(9);
        s += T(10);
        s += T(11);
        s += T(12);
        s += T(13);
        s += T(14);
        s += T(15);
        s += T(16);
        s += T(17);
        s += T(18);
        s += T(19);
        s += T(20);
        s += T(21);
        s += T(22);
        s += T(23);
        s += T(24);
        s += T(25);
        s += T(26);
#undef T
        b[i] = s;
    }
}

void pressure(double* restrict bvc, double* restrict p_new, const double* restrict compression,
              const double* restrict e_old, const double* restrict vnewc, double cls, double p_cut, double pmin,
              double eosvmax, Index n) {
    #pragma omp parallel
    {
        #pragma omp for schedule(static)
        for (Index i = 0; i < n; ++i) bvc[i] = cls * (compression[i] + 1.0);
        #pragma omp for schedule(static)
        for (Index i = 0; i < n; ++i) {
            double p = bvc[i] * e_old[i];
            if (fabs(p) < p_cut) p = 0.0;
            if (vnewc[i] >= eosvmax) p = 0.0;
            if (p < pmin) p = pmin;
            p_new[i] = p;
        }
    }
}

void vol3d(const double* restrict x, const double* restrict y, const double* restrict z, double* restrict vol,
           Index jp, Index kp, double vnormq, Index ibegin, Index iend) {
    #pragma omp parallel for schedule(static)
    for (Index i = ibegin; i < iend; ++i) {
        const Index o[8] = {0, 1, jp, 1 + jp, kp, 1 + kp, jp + kp, 1 + jp + kp};
        double X[8], Y[8], Z[8];
        for (int c = 0; c < 8; ++c) { X[c] = x[i + o[c]]; Y[c] = y[i + o[c]]; Z[c] = z[i + o[c]]; }
        double x71 = X[7] - X[1], x72 = X[7] - X[2], x74 = X[7] - X[4], x30 = X[3] - X[0], x50 = X[5] - X[0],
               x60 = X[6] - X[0];
        double y71 = Y[7] - Y[1], y72 = Y[7] - Y[2], y74 = Y[7] - Y[4], y30 = Y[3] - Y[0], y50 = Y[5] - Y[0],
               y60 = Y[6] - Y[0];
        double z71 = Z[7] - Z[1], z72 = Z[7] - Z[2], z74 = Z[7] - Z[4], z30 = Z[3] - Z[0], z50 = Z[5] - Z[0],
               z60 = Z[6] - Z[0];
        double xps = x71 + x60, yps = y71 + y60, zps = z71 + z60;
        double cyz = y72 * z30 - z72 * y30, czx = z72 * x30 - x72 * z30, cxy = x72 * y30 - y72 * x30;
        double v = xps * cyz + yps * czx + zps * cxy;
        xps = x72 + x50; yps = y72 + y50; zps = z72 + z50;
        cyz = y74 * z60 - z74 * y60; czx = z74 * x60 - x74 * z60; cxy = x74 * y60 - y74 * x60;
        v += xps * cyz + yps * czx + zps * cxy;
        xps = x74 + x30; yps = y74 + y30; zps = z74 + z30;
        cyz = y71 * z50 - z71 * y50; czx = z71 * x50 - x71 * z50; cxy = x71 * y50 - y71 * x50;
        v += xps * cyz + yps * czx + zps * cxy;
        vol[i] = v * vnormq;
    }
}

/* Base_CUDA-style hand-written CUDA for the seven RAJAPerf apps kernels, as RAJAPerf's Base_CUDA
   variants write them: plain Real_ptr arguments (no __restrict__), RAJAPerf's corner and stencil
   pointers shifted on the host, 256 threads per block, one thread per iterate, every loop its own
   launch, FIR's coefficients in __constant__ memory, LTIMES over a (32, 4, 2) block of (m, g, z).
   Compiled at run time by NVRTC through CuPy's RawModule with its default options (FMA on, as
   nvcc's default, which RAJAPerf builds with). */

typedef double* Real_ptr;
typedef long long Index_type;
typedef const Index_type* Index_ptr;

#define BLOCK 256
#define FIR_COEFFLEN 16

extern "C" {
__constant__ double fir_coeff[FIR_COEFFLEN];
}

extern "C" __global__ void __launch_bounds__(BLOCK)
deldotvec2d(Real_ptr div, const Real_ptr x1, const Real_ptr x2, const Real_ptr x3, const Real_ptr x4,
            const Real_ptr y1, const Real_ptr y2, const Real_ptr y3, const Real_ptr y4,
            const Real_ptr fx1, const Real_ptr fx2, const Real_ptr fx3, const Real_ptr fx4,
            const Real_ptr fy1, const Real_ptr fy2, const Real_ptr fy3, const Real_ptr fy4,
            Index_ptr real_zones, double half, double ptiny, Index_type iend)
{
  Index_type ii = (Index_type)blockIdx.x * blockDim.x + threadIdx.x;
  if (ii < iend) {
    Index_type i = real_zones[ii];
    double xi  = half * (x1[i]  + x2[i]  - x3[i]  - x4[i]);
    double xj  = half * (x2[i]  + x3[i]  - x4[i]  - x1[i]);
    double yi  = half * (y1[i]  + y2[i]  - y3[i]  - y4[i]);
    double yj  = half * (y2[i]  + y3[i]  - y4[i]  - y1[i]);
    double fxi = half * (fx1[i] + fx2[i] - fx3[i] - fx4[i]);
    double fxj = half * (fx2[i] + fx3[i] - fx4[i] - fx1[i]);
    double fyi = half * (fy1[i] + fy2[i] - fy3[i] - fy4[i]);
    double fyj = half * (fy2[i] + fy3[i] - fy4[i] - fy1[i]);
    double rarea  = 1.0 / (xi * yj - xj * yi + ptiny);
    double dfxdx  = rarea * (fxi * yj - fxj * yi);
    double dfydy  = rarea * (fyj * xi - fyi * xj);
    double affine = (fy1[i] + fy2[i] + fy3[i] + fy4[i]) / (y1[i] + y2[i] + y3[i] + y4[i]);
    div[i] = dfxdx + dfydy + affine;
  }
}

__device__ inline double ssc_fix(double ssc) { return ssc <= 0.1111111e-36 ? 0.3333333e-18 : sqrt(ssc); }

extern "C" __global__ void __launch_bounds__(BLOCK)
energycalc1(Real_ptr e_new, const Real_ptr e_old, const Real_ptr delvc, const Real_ptr p_old, const Real_ptr q_old,
            const Real_ptr work, Index_type iend)
{
  Index_type i = (Index_type)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < iend) {
    e_new[i] = e_old[i] - 0.5 * delvc[i] * (p_old[i] + q_old[i]) + 0.5 * work[i];
  }
}

extern "C" __global__ void __launch_bounds__(BLOCK)
energycalc2(const Real_ptr delvc, Real_ptr q_new, const Real_ptr compHalfStep, const Real_ptr pHalfStep,
            const Real_ptr e_new, const Real_ptr bvc, const Real_ptr pbvc, const Real_ptr ql_old,
            const Real_ptr qq_old, double rho0, Index_type iend)
{
  Index_type i = (Index_type)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < iend) {
    if (delvc[i] > 0.0) {
      q_new[i] = 0.0;
    } else {
      double vhalf = 1.0 / (1.0 + compHalfStep[i]);
      double ssc = ssc_fix((pbvc[i] * e_new[i] + vhalf * vhalf * bvc[i] * pHalfStep[i]) / rho0);
      q_new[i] = (ssc * ql_old[i] + qq_old[i]);
    }
  }
}

extern "C" __global__ void __launch_bounds__(BLOCK)
energycalc3(Real_ptr e_new, const Real_ptr delvc, const Real_ptr p_old, const Real_ptr q_old,
            const Real_ptr pHalfStep, const Real_ptr q_new, Index_type iend)
{
  Index_type i = (Index_type)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < iend) {
    e_new[i] = e_new[i] + 0.5 * delvc[i] * (3.0 * (p_old[i] + q_old[i]) - 4.0 * (pHalfStep[i] + q_new[i]));
  }
}

extern "C" __global__ void __launch_bounds__(BLOCK)
energycalc4(Real_ptr e_new, const Real_ptr work, double e_cut, double emin, Index_type iend)
{
  Index_type i = (Index_type)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < iend) {
    e_new[i] += 0.5 * work[i];
    if (fabs(e_new[i]) < e_cut) { e_new[i] = 0.0; }
    if (e_new[i] < emin) { e_new[i] = emin; }
  }
}

extern "C" __global__ void __launch_bounds__(BLOCK)
energycalc5(const Real_ptr delvc, const Real_ptr pbvc, Real_ptr e_new, const Real_ptr vnewc, const Real_ptr bvc,
            const Real_ptr p_new, const Real_ptr ql_old, const Real_ptr qq_old, const Real_ptr p_old,
            const Real_ptr q_old, const Real_ptr pHalfStep, const Real_ptr q_new, double rho0, double e_cut,
            double emin, Index_type iend)
{
  Index_type i = (Index_type)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < iend) {
    double q_tilde;
    if (delvc[i] > 0.0) {
      q_tilde = 0.0;
    } else {
      double ssc = ssc_fix((pbvc[i] * e_new[i] + vnewc[i] * vnewc[i] * bvc[i] * p_new[i]) / rho0);
      q_tilde = (ssc * ql_old[i] + qq_old[i]);
    }
    e_new[i] = e_new[i] - (7.0 * (p_old[i] + q_old[i]) - 8.0 * (pHalfStep[i] + q_new[i])
                           + (p_new[i] + q_tilde)) * delvc[i] / 6.0;
    if (fabs(e_new[i]) < e_cut) { e_new[i] = 0.0; }
    if (e_new[i] < emin) { e_new[i] = emin; }
  }
}

extern "C" __global__ void __launch_bounds__(BLOCK)
energycalc6(const Real_ptr delvc, Real_ptr q_new, const Real_ptr pbvc, const Real_ptr e_new, const Real_ptr vnewc,
            const Real_ptr bvc, const Real_ptr p_new, const Real_ptr ql_old, const Real_ptr qq_old, double rho0,
            double q_cut, Index_type iend)
{
  Index_type i = (Index_type)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < iend) {
    if (delvc[i] <= 0.0) {
      double ssc = ssc_fix((pbvc[i] * e_new[i] + vnewc[i] * vnewc[i] * bvc[i] * p_new[i]) / rho0);
      q_new[i] = (ssc * ql_old[i] + qq_old[i]);
      if (fabs(q_new[i]) < q_cut) q_new[i] = 0.0;
    }
  }
}

extern "C" __global__ void __launch_bounds__(BLOCK)
fir(Real_ptr out, const Real_ptr in, const Index_type coefflen, Index_type iend)
{
  Index_type i = (Index_type)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < iend) {
    double sum = 0.0;
    for (Index_type j = 0; j < coefflen; ++j) {
      sum += fir_coeff[j] * in[i + j];
    }
    out[i] = sum;
  }
}

extern "C" __global__ void __launch_bounds__(BLOCK)
ltimes(Real_ptr phidat, const Real_ptr elldat, const Real_ptr psidat, Index_type num_d, Index_type num_m,
       Index_type num_g, Index_type num_z)
{
  Index_type m = (Index_type)blockIdx.x * blockDim.x + threadIdx.x;
  Index_type g = (Index_type)blockIdx.y * blockDim.y + threadIdx.y;
  Index_type z = (Index_type)blockIdx.z * blockDim.z + threadIdx.z;
  if (m < num_m && g < num_g && z < num_z) {
    for (Index_type d = 0; d < num_d; ++d) {
      phidat[m + num_m * (g + num_g * z)] += elldat[d + num_d * m] * psidat[d + num_d * (g + num_g * z)];
    }
  }
}

extern "C" __global__ void __launch_bounds__(BLOCK)
matvec_3d(Real_ptr b, const Real_ptr dbl, const Real_ptr dbc, const Real_ptr dbr, const Real_ptr dcl, const Real_ptr dcc, const Real_ptr dcr,
          const Real_ptr dfl, const Real_ptr dfc, const Real_ptr dfr, const Real_ptr cbl, const Real_ptr cbc, const Real_ptr cbr,
          const Real_ptr ccl, const Real_ptr ccc, const Real_ptr ccr, const Real_ptr cfl, const Real_ptr cfc, const Real_ptr cfr,
          const Real_ptr ubl, const Real_ptr ubc, const Real_ptr ubr, const Real_ptr ucl, const Real_ptr ucc, const Real_ptr ucr,
          const Real_ptr ufl, const Real_ptr ufc, const Real_ptr ufr, const Real_ptr xdbl, const Real_ptr xdbc, const Real_ptr xdbr,
          const Real_ptr xdcl, const Real_ptr xdcc, const Real_ptr xdcr, const Real_ptr xdfl, const Real_ptr xdfc, const Real_ptr xdfr,
          const Real_ptr xcbl, const Real_ptr xcbc, const Real_ptr xcbr, const Real_ptr xccl, const Real_ptr xccc, const Real_ptr xccr,
          const Real_ptr xcfl, const Real_ptr xcfc, const Real_ptr xcfr, const Real_ptr xubl, const Real_ptr xubc, const Real_ptr xubr,
          const Real_ptr xucl, const Real_ptr xucc, const Real_ptr xucr, const Real_ptr xufl, const Real_ptr xufc, const Real_ptr xufr,
          Index_ptr real_zones, Index_type ibegin, Index_type iend)
{
  Index_type ii = ibegin + (Index_type)blockIdx.x * blockDim.x + threadIdx.x;
  if (ii < iend) {
    Index_type i = real_zones[ii];
    b[i] = dbl[i] * xdbl[i] +
           dbc[i] * xdbc[i] +
           dbr[i] * xdbr[i] +
           dcl[i] * xdcl[i] +
           dcc[i] * xdcc[i] +
           dcr[i] * xdcr[i] +
           dfl[i] * xdfl[i] +
           dfc[i] * xdfc[i] +
           dfr[i] * xdfr[i] +
           cbl[i] * xcbl[i] +
           cbc[i] * xcbc[i] +
           cbr[i] * xcbr[i] +
           ccl[i] * xccl[i] +
           ccc[i] * xccc[i] +
           ccr[i] * xccr[i] +
           cfl[i] * xcfl[i] +
           cfc[i] * xcfc[i] +
           cfr[i] * xcfr[i] +
           ubl[i] * xubl[i] +
           ubc[i] * xubc[i] +
           ubr[i] * xubr[i] +
           ucl[i] * xucl[i] +
           ucc[i] * xucc[i] +
           ucr[i] * xucr[i] +
           ufl[i] * xufl[i] +
           ufc[i] * xufc[i] +
           ufr[i] * xufr[i];
  }
}

extern "C" __global__ void __launch_bounds__(BLOCK)
pressurecalc1(Real_ptr bvc, const Real_ptr compression, double cls, Index_type iend)
{
  Index_type i = (Index_type)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < iend) {
    bvc[i] = cls * (compression[i] + 1.0);
  }
}

extern "C" __global__ void __launch_bounds__(BLOCK)
pressurecalc2(Real_ptr p_new, const Real_ptr bvc, const Real_ptr e_old, const Real_ptr vnewc, double p_cut,
              double eosvmax, double pmin, Index_type iend)
{
  Index_type i = (Index_type)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < iend) {
    p_new[i] = bvc[i] * e_old[i];
    if (fabs(p_new[i]) < p_cut) p_new[i] = 0.0;
    if (vnewc[i] >= eosvmax) p_new[i] = 0.0;
    if (p_new[i] < pmin) p_new[i] = pmin;
  }
}

extern "C" __global__ void __launch_bounds__(BLOCK)
vol3d(Real_ptr vol, const Real_ptr x0, const Real_ptr x1, const Real_ptr x2, const Real_ptr x3, const Real_ptr x4, const Real_ptr x5,
      const Real_ptr x6, const Real_ptr x7, const Real_ptr y0, const Real_ptr y1, const Real_ptr y2, const Real_ptr y3,
      const Real_ptr y4, const Real_ptr y5, const Real_ptr y6, const Real_ptr y7, const Real_ptr z0, const Real_ptr z1,
      const Real_ptr z2, const Real_ptr z3, const Real_ptr z4, const Real_ptr z5, const Real_ptr z6, const Real_ptr z7,
      double vnormq, Index_type ibegin, Index_type iend)
{
  Index_type i = ibegin + (Index_type)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < iend) {
    double x71 = x7[i] - x1[i], x72 = x7[i] - x2[i], x74 = x7[i] - x4[i];
    double x30 = x3[i] - x0[i], x50 = x5[i] - x0[i], x60 = x6[i] - x0[i];
    double y71 = y7[i] - y1[i], y72 = y7[i] - y2[i], y74 = y7[i] - y4[i];
    double y30 = y3[i] - y0[i], y50 = y5[i] - y0[i], y60 = y6[i] - y0[i];
    double z71 = z7[i] - z1[i], z72 = z7[i] - z2[i], z74 = z7[i] - z4[i];
    double z30 = z3[i] - z0[i], z50 = z5[i] - z0[i], z60 = z6[i] - z0[i];
    double xps = x71 + x60, yps = y71 + y60, zps = z71 + z60;
    double cyz = y72 * z30 - z72 * y30, czx = z72 * x30 - x72 * z30, cxy = x72 * y30 - y72 * x30;
    vol[i] = xps * cyz + yps * czx + zps * cxy;
    xps = x72 + x50; yps = y72 + y50; zps = z72 + z50;
    cyz = y74 * z60 - z74 * y60; czx = z74 * x60 - x74 * z60; cxy = x74 * y60 - y74 * x60;
    vol[i] += xps * cyz + yps * czx + zps * cxy;
    xps = x74 + x30; yps = y74 + y30; zps = z74 + z30;
    cyz = y71 * z50 - z71 * y50; czx = z71 * x50 - x71 * z50; cxy = x71 * y50 - y71 * x50;
    vol[i] += xps * cyz + yps * czx + zps * cxy;
    vol[i] *= vnormq;
  }
}

"""Topology builtins in 3-D launches against NumPy's own enumeration of units."""

import numpy as np
import pytest

import cubepy as cb
from cubepy import Mut, i32
from tests.conftest import poisoned

NAMES = ["ABSOLUTE_POS", "ABSOLUTE_POS_X", "ABSOLUTE_POS_Y", "ABSOLUTE_POS_Z", "UNIT_POS", "UNIT_POS_X",
         "UNIT_POS_Y", "UNIT_POS_Z", "CUBE_POS", "CUBE_POS_X", "CUBE_POS_Y", "CUBE_POS_Z", "CUBE_DIM",
         "CUBE_DIM_X", "CUBE_DIM_Y", "CUBE_DIM_Z", "CUBE_COUNT", "CUBE_COUNT_X", "CUBE_COUNT_Y", "CUBE_COUNT_Z",
         "PLANE_DIM", "UNIT_POS_PLANE"]


@cb.kernel
def record(out: Mut[cb.Array[i32]]):
    slot = cb.ABSOLUTE_POS
    out[slot, 0] = cb.ABSOLUTE_POS
    out[slot, 1] = cb.ABSOLUTE_POS_X
    out[slot, 2] = cb.ABSOLUTE_POS_Y
    out[slot, 3] = cb.ABSOLUTE_POS_Z
    out[slot, 4] = cb.UNIT_POS
    out[slot, 5] = cb.UNIT_POS_X
    out[slot, 6] = cb.UNIT_POS_Y
    out[slot, 7] = cb.UNIT_POS_Z
    out[slot, 8] = cb.CUBE_POS
    out[slot, 9] = cb.CUBE_POS_X
    out[slot, 10] = cb.CUBE_POS_Y
    out[slot, 11] = cb.CUBE_POS_Z
    out[slot, 12] = cb.CUBE_DIM
    out[slot, 13] = cb.CUBE_DIM_X
    out[slot, 14] = cb.CUBE_DIM_Y
    out[slot, 15] = cb.CUBE_DIM_Z
    out[slot, 16] = cb.CUBE_COUNT
    out[slot, 17] = cb.CUBE_COUNT_X
    out[slot, 18] = cb.CUBE_COUNT_Y
    out[slot, 19] = cb.CUBE_COUNT_Z
    out[slot, 20] = cb.PLANE_DIM
    out[slot, 21] = cb.UNIT_POS_PLANE


@pytest.mark.parametrize("count,dim", [((3, 1, 1), (40, 1, 1)), ((2, 3, 2), (4, 3, 2)), ((1, 2, 3), (8, 8, 1))])
def test_every_builtin_in_3d_launches(dev, count, dim):
    total = int(np.prod(count) * np.prod(dim))
    out = poisoned((total, len(NAMES)), np.int32)
    record.launch(count, dim, out, device=dev)
    plane = dev.properties.plane_dim
    rows = []
    for cz in range(count[2]):
        for cy in range(count[1]):
            for cx in range(count[0]):
                for uz in range(dim[2]):
                    for uy in range(dim[1]):
                        for ux in range(dim[0]):
                            ax, ay, az = cx * dim[0] + ux, cy * dim[1] + uy, cz * dim[2] + uz
                            unit = ux + uy * dim[0] + uz * dim[0] * dim[1]
                            width, height = count[0] * dim[0], count[1] * dim[1]
                            rows.append([ax + width * (ay + height * az), ax, ay, az, unit, ux, uy, uz,
                                         cx + count[0] * (cy + count[1] * cz), cx, cy, cz, int(np.prod(dim)),
                                         *dim, int(np.prod(count)), *count, plane, unit % plane])
    want = np.array(rows, np.int32)
    got = out[np.argsort(out[:, 0])]
    want = want[np.argsort(want[:, 0])]
    for k, name in enumerate(NAMES):
        np.testing.assert_array_equal(got[:, k], want[:, k], err_msg=name)

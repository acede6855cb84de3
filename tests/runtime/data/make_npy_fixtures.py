#!/usr/bin/env python3
"""Writes the small .npy fixtures of tests/runtime/test_npy.cc with numpy (run from this folder).

The C++ reader is checked against files numpy itself produced, not against its own writer.
"""
import numpy as np

np.save("f32_2x3.npy", np.arange(6, dtype="<f4").reshape(2, 3) * 0.5 - 1)
np.save("f64_3.npy", np.array([0.1, -2.5, 1e10], dtype="<f8"))
np.save("i64_4.npy", np.array([-1, 0, 2**40, 7], dtype="<i8"))
np.save("i32_2x2.npy", np.array([[1, -2], [3, 2**31 - 1]], dtype="<i4"))
np.save("scalar_f32.npy", np.float32(3.5))
np.save("fortran_2x3.npy", np.asfortranarray(np.arange(6, dtype="<f4").reshape(2, 3)))
np.save("u8_3.npy", np.array([1, 2, 3], dtype=np.uint8))
np.save("i16_3.npy", np.array([1, -2, 3], dtype="<i2"))
np.save("be_f4_2.npy", np.array([1, 2], dtype=">f4"))
np.save("bool_3.npy", np.array([True, False, True]))
np.save("empty_0x3.npy", np.zeros((0, 3), dtype="<f4"))
with open("v2_f32_5.npy", "wb") as f:
    np.lib.format.write_array(f, np.array([1, 2, 3, 4, 5], dtype="<f4") / 4, version=(2, 0))

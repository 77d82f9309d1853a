"""NPZ and token files for the data tests, written by the standard library
alone (a user's clone may have no numpy): np.savez's layout (stored members)
or np.savez_compressed's (deflated), and llm.c's token files."""
import array
import os
import struct
import zipfile


def npy(typecode, descr, values, shape):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        descr, "".join(f"{d}," for d in shape) if len(shape) == 1 else ", ".join(map(str, shape)))
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + array.array(typecode, values).tobytes()


def write_mlp_npz_of_size(path, rows, block=1000):
    """The mlp data's first `block` rows repeated to `rows` rows: a large
    shard in seconds (for memory and speed; the rows' content does not matter there)."""
    one = mlp_rows(0, block)
    arrays = {}
    for name, (typecode, descr, values, shape) in one.items():
        tiled = array.array(typecode, values) * (rows // block) + array.array(typecode, values[:(rows % block) * shape[1]])
        arrays[name] = (typecode, descr, tiled, (rows, shape[1]))
    write_npz(path, arrays)


def write_npz(path, arrays, compressed=False):
    """arrays: name -> (typecode, descr, flat values, shape)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED if compressed else zipfile.ZIP_STORED) as z:
        for name, (typecode, descr, values, shape) in arrays.items():
            z.writestr(name + ".npy", npy(typecode, descr, values, shape))


def mlp_rows(first, n, seed=0):
    """Rows [first, first + n) of the mlp test model's data: x float32 [n, 32]
    and labels float32 [n, 10], a function of the row number alone."""
    x = [((r * 7919 + j * 104729 + seed) % 2003) / 1001.0 - 1.0 for r in range(first, first + n) for j in range(32)]
    y = [((r * 31 + j * 17 + seed) % 101) / 50.0 - 1.0 for r in range(first, first + n) for j in range(10)]
    return {"x": ("f", "<f4", x, (n, 32)), "labels": ("f", "<f4", y, (n, 10))}


def write_mlp_shards(folder, sizes, compressed=()):
    """Shards holding consecutive rows, of the given sizes; the shards whose
    index is in `compressed` deflated. Returns their paths."""
    os.makedirs(folder, exist_ok=True)
    paths, first = [], 0
    for i, n in enumerate(sizes):
        p = os.path.join(folder, f"shard_{i:03d}.npz")
        write_npz(p, mlp_rows(first, n), compressed=i in compressed)
        paths.append(p)
        first += n
    return paths


def write_llmc_tokens(path, tokens, width=2):
    """llm.c's token file: 256 int32 (magic, version, count), then the tokens."""
    magic, version, code = (20240520, 1, "H") if width == 2 else (20240801, 7, "I")
    header = array.array("i", [magic, version, len(tokens)] + [0] * 253)
    with open(path, "wb") as f:
        f.write(header.tobytes())
        f.write(array.array(code, tokens).tobytes())

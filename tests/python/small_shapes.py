"""A fresh folder under the test's working directory with a small shapes dataset in it, made by
`detkit make-shapes` (96x64 images): what the Python training tests train on."""
import os
import shutil
import subprocess


def small_shapes(detkit_binary, folder, train, val, seed):
    """Returns the folder; the dataset is <folder>/shapes/{annotations,train,val}."""
    work = os.path.join(os.getcwd(), folder)
    shutil.rmtree(work, ignore_errors=True)
    subprocess.run([detkit_binary, "make-shapes", "--out", f"{work}/shapes", "--train", str(train),
                    "--val", str(val), "--size", "96x64", "--seed", str(seed)], check=True,
                   capture_output=True)
    return work

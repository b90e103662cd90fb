"""minnet._checks: the parsers of int tuples, paddings and pad pairs; the class-label check."""
import numpy as np
import pytest

import minnet as mn
import minnet.functional as F
from minnet import layers
from minnet._checks import check_int_tuple, check_labels, check_pad_pairs, check_padding


def test_int_tuple_accepts_an_int_or_n_ints():
    assert check_int_tuple("k", 3, 2) == (3, 3)
    assert check_int_tuple("k", [2, np.int64(5)], 2) == (2, 5)
    assert check_int_tuple("k", (0, 4), 2, minimum=0) == (0, 4)
    assert check_int_tuple("k", 7, 1) == (7,)


@pytest.mark.parametrize("value, error", [
    (0, ValueError), ((1, 0), ValueError), ((1,), ValueError), ((1, 2, 3), ValueError),
    ((2.0, 2), ValueError), ((True, 1), ValueError), (2.5, TypeError), ("2", TypeError),
    (None, TypeError), (np.array([2, 2]), TypeError), (True, ValueError),
])
def test_int_tuple_errors_name_the_argument(value, error):
    with pytest.raises(error, match=r"`kernel_size`: expected an int >= 1 or a tuple of 2 such "
                                    r"ints\. Received: kernel_size="):
        check_int_tuple("kernel_size", value, 2)
    # error=ValueError: one class for every failure (Keras's standardize_tuple)
    with pytest.raises(ValueError, match="`kernel_size`"):
        check_int_tuple("kernel_size", value, 2, error=ValueError)


def test_int_tuple_maximum():
    assert check_int_tuple("s", 2**31 - 1, 2, maximum=2**31 - 1) == (2**31 - 1,) * 2
    with pytest.raises(ValueError, match=r"expected an int in \[1, 2147483647\].*Received: s=\(1, 2147483648\)"):
        check_int_tuple("s", (1, 2**31), 2, maximum=2**31 - 1)


def test_padding():
    assert check_padding("padding", "SAME", 2) == "same"
    assert check_padding("padding", 1, 2) == (1, 1)
    assert check_padding("padding", "causal", 1, allow_causal=True) == "causal"
    with pytest.raises(ValueError, match="'valid' or 'same'.*Received: padding='full'"):
        check_padding("padding", "full", 2)
    with pytest.raises(ValueError, match="Received: padding='causal'"):
        check_padding("padding", "causal", 2)
    with pytest.raises(ValueError, match=r"\[0, 9\]"):
        check_padding("padding", 10, 2, maximum=9)
    with pytest.raises(ValueError, match="`padding`"):
        check_padding("padding", 2.5, 2, error=ValueError)


def test_pad_pairs():
    assert check_pad_pairs("p", 2) == ((2, 2), (2, 2))
    assert check_pad_pairs("p", (1, 3)) == ((1, 1), (3, 3))
    assert check_pad_pairs("p", [[1, 0], [2, np.int32(4)]]) == ((1, 0), (2, 4))
    for bad in (-1, (1, -1), ((1, 2), 3), ((1,), (2, 3)), ((1, -2), (0, 0)), "same", 1.0, (True, 1)):
        with pytest.raises(ValueError, match=r"`p`: expected an int >= 0, a tuple of 2 such ints, "
                                             r"or a tuple of 2 tuples .*Received: p="):
            check_pad_pairs("p", bad)


def test_every_entry_point_words_its_pairs_alike():
    x = np.ones((1, 2, 6, 6), np.float32)
    w = np.ones((3, 2, 3, 3), np.float32)
    cases = [
        (lambda: layers.Conv2D(2, (3, 0)), "kernel_size"),
        (lambda: layers.Conv2D(2, 3, padding="full"), "padding"),
        (lambda: F.conv2d(x, w, stride=(1, 0)), "stride"),
        (lambda: F.conv2d(x, w, padding=((1, -1), (0, 0))), "padding"),
        (lambda: F.conv_transpose2d(x, np.ones((2, 3, 3, 3), np.float32), output_padding=-1),
         "output_padding"),
        (lambda: F.max_pool2d(x, (2, 0)), "pool_size"),
        (lambda: F.avg_pool2d(x, 2, padding=-1), "padding"),
        (lambda: layers.ZeroPadding2D(((1, 2), 3)), "padding"),
        (lambda: layers.Cropping2D(-1), "cropping"),
        (lambda: layers.UpSampling2D((2, 0)), "size"),
        (lambda: F.interpolate(mn.tensor(x), size=(4,)), "size"),
    ]
    for call, name in cases:
        with pytest.raises(ValueError, match=rf"Invalid value for argument `{name}`: expected .*"
                                             rf"Received: {name}="):
            call()


# check_labels: one min/max pass decides the common case; the mask runs only when a label
# may be out of range, so both branches are pinned here (in range, ignore_index outside the
# range, and a bad label at either end still named with its position).
@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8, np.float32])
def test_check_labels_accepts_labels_in_range(dtype):
    labels = np.array([0, 3, 9, 1], dtype=dtype)
    out = check_labels("y_true", labels, 10)
    assert out.dtype == np.int64 and out.tolist() == [0, 3, 9, 1]


def test_check_labels_allows_ignore_index_outside_the_range():
    out = check_labels("target", np.array([-100, 2, -100]), 3, ignore_index=-100)
    assert out.tolist() == [-100, 2, -100]
    with pytest.raises(ValueError, match=r"in \[0, 3\) or -100\. Received: -1 at flat index 1"):
        check_labels("target", np.array([-100, -1, 2]), 3, ignore_index=-100)


@pytest.mark.parametrize("labels, bad", [([0, 10, 2], "10 at flat index 1"),
                                         ([-1, 0, 2], "-1 at flat index 0"),
                                         ([1, 2, 11], "11 at flat index 2")])
def test_check_labels_names_the_first_label_out_of_range(labels, bad):
    with pytest.raises(ValueError, match=rf"`y_true`: expected class labels in \[0, 10\)\. Received: {bad}"):
        check_labels("y_true", np.array(labels), 10)

"""start_async / wait / callbacks on an InferRequest, and AsyncInferQueue: jobs, userdata, idle requests, results,
and the exceptions a failing callback or inference raises."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable

import numpy as np
import openvino as ov
import pytest

from tests.conformance import models

pytestmark = pytest.mark.slow


def settle() -> None:
    """Let OpenVINO's callback threads let go of Python before the test's requests and queues are destroyed.

    ``wait``/``wait_all`` can return while a request's callback thread is still to take the GIL once more; a
    request, queue or compiled model destroyed right then by the main thread (which holds the GIL while it joins
    those threads) deadlocks inside OpenVINO's binding, whatever compiled the model: one full run of this suite
    hung that way. A short sleep releases the GIL so the thread finishes first.
    """
    time.sleep(0.05)


@pytest.fixture
def compiled(via):
    return via.compile(models.relu_scale_model())


@pytest.mark.parametrize("share_inputs", [True, False])
def test_start_async_with_callbacks(compiled, share_inputs):
    x = models.image()
    requests = [compiled.create_infer_request() for _ in range(3)]
    finished, lock = [], threading.Lock()

    def callback(userdata):
        with lock:
            finished.append(userdata)

    for index, request in enumerate(requests):
        request.set_callback(callback, index)
        request.start_async({0: x}, share_inputs=share_inputs)
    for request in requests:
        request.wait()
        assert request.latency > 0
        np.testing.assert_allclose(request.get_output_tensor().data, models.relu_scale_reference(x), rtol=1e-6)
    assert sorted(finished) == [0, 1, 2]
    settle()


def test_wait_for_and_userdata(compiled):
    request = compiled.create_infer_request()
    assert request.userdata is None
    seen = []
    request.set_callback(seen.append, {"job": 7})
    request.start_async({"data": models.image()})
    assert request.wait_for(10_000)
    assert seen == [{"job": 7}]
    assert request.userdata == {"job": 7}
    settle()


@pytest.mark.parametrize("share_inputs", [True, False])
def test_infer_queue_runs_every_job(compiled, share_inputs):
    jobs, done = 8, {}
    queue = ov.AsyncInferQueue(compiled, 4)

    def callback(request, job):
        done[job] = (request.latency, request.get_output_tensor().data.copy())

    queue.set_callback(callback)
    assert queue.is_ready() and len(queue) == 4
    images = [models.image(seed=job) for job in range(jobs)]
    for job in range(jobs):
        queue.start_async({"data": images[job]}, job, share_inputs=share_inputs)
    queue.wait_all()
    assert sorted(done) == list(range(jobs))
    for job, (latency, out) in done.items():
        assert latency > 0
        np.testing.assert_allclose(out, models.relu_scale_reference(images[job]), rtol=1e-6)
    settle()


def test_infer_queue_results_equal_a_synchronous_infer(compiled):
    x = models.image()
    queue = ov.AsyncInferQueue(compiled, 2)
    for job in range(4):
        queue.start_async({0: x}, job)
    queue.wait_all()
    expected = compiled.create_infer_request().infer({0: x})
    for index in range(len(queue)):
        np.testing.assert_array_equal(list(queue[index].results.values())[0], list(expected.values())[0])
    settle()


def test_infer_queue_iterates_its_requests(compiled):
    queue = ov.AsyncInferQueue(compiled, 3)
    assert isinstance(queue, Iterable)
    requests = list(queue)
    assert len(requests) == 3 and all(isinstance(r, ov.InferRequest) for r in requests)
    assert queue.userdata == [None, None, None]
    it = iter(ov.AsyncInferQueue(compiled, 1))
    assert next(it).userdata is None
    with pytest.raises(StopIteration):
        next(it)
    settle()


def test_infer_queue_idle_requests(compiled):
    queue = ov.AsyncInferQueue(compiled, 2)
    for _ in range(len(queue)):
        queue.start_async({"data": models.image()})
    queue.wait_all()
    assert all(request.wait_for(0) for request in queue)
    for _ in range(6):
        idle = queue.get_idle_request_id()
        assert queue[idle].wait_for(0)
        queue.start_async({"data": models.image()})
    queue.wait_all()
    settle()


def test_infer_queue_with_array_like_inputs(via):
    class ArrayLike:
        def __init__(self, values):
            self.values = values

        def __array__(self, dtype=None, copy=None):
            return self.values

    compiled = via.compile(models.abs_model(ov.Type.f32, shape=(2, 2)))
    values = np.ascontiguousarray([[-2, -1], [0, 1]], dtype=np.float32)
    queue = ov.AsyncInferQueue(compiled, 4)
    for _ in range(4):
        queue.start_async(ArrayLike(values))
    queue.wait_all()
    for request in queue:
        np.testing.assert_array_equal(request.get_output_tensor().data, np.abs(values))
    settle()


def test_error_in_a_callback_reaches_wait_all(compiled):
    """An OpenVINO error in a callback is a RuntimeError at wait_all; a Python error keeps its own type."""
    queue = ov.AsyncInferQueue(compiled, 2)
    queue.set_callback(lambda request, _: request.get_tensor("Unknown"))
    with pytest.raises(RuntimeError, match="Unknown"):
        for _ in range(4):
            queue.start_async({"data": models.image()})
        queue.wait_all()
    queue = ov.AsyncInferQueue(compiled, 1)
    queue.set_callback(lambda request, _: request + 21)
    with pytest.raises(TypeError, match="unsupported operand"):
        queue.start_async({"data": models.image()})
        queue.wait_all()
    settle()


@pytest.mark.parametrize("with_callback", [False, True])
def test_error_inside_inference_reaches_wait_all(via, with_callback):
    compiled = via.compile(models.topk_model())
    queue = ov.AsyncInferQueue(compiled, 2)
    if with_callback:
        queue.set_callback(lambda request, _: pytest.fail("a failed inference calls no callback"))
    data = np.arange(10, dtype=np.float32)
    with pytest.raises(RuntimeError):
        for _ in range(3):
            queue.start_async({"data": data, "k": np.array(11, dtype=np.int32)})  # k > 10 elements
        queue.wait_all()
    settle()


@pytest.mark.parametrize(("element_type", "dtype"), [(ov.Type.f32, np.float32), (ov.Type.i64, np.int64),
                                                     (ov.Type.u8, np.uint8), (ov.Type.boolean, bool)])
def test_start_async_element_types(via, element_type, dtype):
    compiled = via.compile(models.concat_model(element_type))
    request = compiled.create_infer_request()
    inputs, expected = models.concat_inputs(element_type, dtype)
    request.start_async(inputs)
    request.wait()
    np.testing.assert_array_equal(request.output_tensors[0].data, expected)
    settle()

"""What the autodiff lint rules claim, run on MindSpore CPU: one JSON line of facts.

Run by tests/test_autodiff_lints.py once per mode (MS_MIGRATE_MODE=pynative|graph). A line that
ends in `# flagged: CODE` is one the rule must flag; the test lints this file and compares.
"""

import json
import os

import mindspore as ms
import numpy as np
from mindspore import nn, ops

GRAPH = os.environ.get("MS_MIGRATE_MODE") == "graph"
ms.set_context(mode=ms.GRAPH_MODE if GRAPH else ms.PYNATIVE_MODE)


class LossWithLogits(nn.Cell):
    def __init__(self):
        super().__init__()
        self.dense = nn.Dense(3, 2, weight_init="normal", bias_init="zeros")
        self.loss_fn = nn.MSELoss()

    def construct(self, data, label):
        logits = self.dense(data)
        return self.loss_fn(logits, label), logits


class LossOnly(nn.Cell):
    def __init__(self, net):
        super().__init__()
        self.net = net
        self.loss_fn = nn.MSELoss()

    def construct(self, data, label):
        return self.loss_fn(self.net.dense(data), label)


class StopAux(nn.Cell):
    def __init__(self, net):
        super().__init__()
        self.net = net

    def construct(self, data, label):
        loss, logits = self.net(data, label)
        return loss, ops.stop_gradient(logits)


class Scale(nn.Cell):
    def __init__(self):
        super().__init__()
        self.mul = ops.Mul()

    def construct(self, x):
        return self.mul(x, 2.0)


class IgnoresInput(nn.Cell):
    def __init__(self):
        super().__init__()
        self.w = ms.Parameter(ms.Tensor(np.ones(3, np.float32)), name="w")

    def construct(self, x):
        return (self.w * self.w).sum()


def square_sum(x):
    return (x * x).sum()


square_grad = ms.grad(square_sum)


@ms.jit
def keyword_call(x):
    return square_grad(x=x)


def inline_lambda(x):
    return ms.grad(lambda p: (p * p).sum())(x)


def numbers(value):
    if isinstance(value, (tuple, list)):
        return [numbers(item) for item in value]
    return value.asnumpy().tolist()


def error_of(run):
    try:
        run()
    except (ValueError, TypeError, RuntimeError) as error:
        return f"{type(error).__name__}: {str(error).splitlines()[0]}"
    return None


data = ms.Tensor(np.arange(12, dtype=np.float32).reshape(4, 3) / 10)
label = ms.Tensor(np.ones((4, 2), np.float32))
net = LossWithLogits()
weights = net.trainable_params()
facts = {}

# MS203: without has_aux the gradient is that of loss + sum(logits).
facts["summed"] = numbers(ms.grad(net, None, weights)(data, label))  # flagged: MS203
grad_op = ops.GradOperation(get_by_list=True)
facts["summed_gradoperation"] = numbers(grad_op(net, weights)(data, label))  # flagged: MS203
facts["has_aux"] = numbers(ms.grad(net, None, weights, has_aux=True)(data, label)[0])
facts["loss_only"] = numbers(ms.grad(LossOnly(net), None, weights)(data, label))
facts["stop_gradient"] = numbers(ms.grad(StopAux(net), None, weights)(data, label))

# MS204: the aux of grad(..., has_aux=True) is a tuple, even with one element.
grads, aux = ms.grad(net, None, weights, has_aux=True)(data, label)
facts["aux_is_tuple"] = [type(aux).__name__, len(aux)]
facts["value_and_grad_shape"] = len(ms.value_and_grad(net, None, weights, has_aux=True)(data, label))

# MS206: has_aux=True on a function with one output.
facts["single_output_error"] = error_of(
    lambda: ms.grad(LossOnly(net), None, weights, has_aux=True)(data, label)  # flagged: MS206
)

# MS207: weights that are empty give no gradients, and no error.
facts["empty_list"] = numbers(ms.grad(LossOnly(net), None, [])(data, label))  # flagged: MS207
no_weights = Scale().trainable_params()
facts["paramless_cell"] = numbers(ms.grad(LossOnly(net), None, no_weights)(data, label))  # flagged: MS207

# MS209: the gradient with respect to an input the function never reads is zeros.
facts["ignored_input"] = numbers(ops.GradOperation()(IgnoresInput())(data[0]))  # flagged: MS209

# MS208: GRAPH mode rejects an inline lambda, and keywords to a grad function built outside
# construct / @jit (this file picks its mode at run time, so MS208 does not run on it).
facts["lambda_error"] = error_of(lambda: inline_lambda(data[0]))
facts["keyword_error"] = error_of(lambda: keyword_call(data[0]))

print(json.dumps(facts))

"""Loss-scaled training for mixed precision."""
import mindspore.nn as nn
import mindspore.ops as ops
from mindspore import ParameterTuple


class TrainWithLossScale(nn.Cell):
    def __init__(self, network, optimizer, sens=1024.0):
        super().__init__(auto_prefix=False)
        self.network = network
        self.network.set_grad()  # PYNATIVE records the forward; the grad reuses it
        self.optimizer = optimizer
        self.weights = ParameterTuple(network.trainable_params())
        self.grad = ops.GradOperation(get_by_list=True, sens_param=True)
        self.sens = sens

    def construct(self, data, label):
        weights = self.weights
        loss = self.network(data, label)
        sens = ops.fill(ops.dtype(loss), ops.shape(loss), self.sens)
        grads = self.grad(self.network, weights)(data, label, sens)
        grads = ops.clip_by_global_norm(grads, 5.0)
        loss = ops.depend(loss, self.optimizer(grads))
        return loss

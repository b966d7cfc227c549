"""A loss-scaled train step in the shape of the BERT and GPT-2 fine-tuning Cells: Ascend's
float-status operators around the grad, FloatStatus on a GPU, a loss-scale update Cell."""
import mindspore as ms
import mindspore.nn as nn
from mindspore import Parameter, Tensor, context
from mindspore.common import dtype as mstype
from mindspore.ops import composite as C
from mindspore.ops import functional as F
from mindspore.ops import operations as P

GRADIENT_CLIP_VALUE = 1.0
grad_scale = C.MultitypeFuncGraph("grad_scale")
reciprocal = P.Reciprocal()


@grad_scale.register("Tensor", "Tensor")
def tensor_grad_scale(scale, grad):
    return grad * reciprocal(scale)


_grad_overflow = C.MultitypeFuncGraph("_grad_overflow")
grad_overflow = P.FloatStatus()


@_grad_overflow.register("Tensor")
def _tensor_grad_overflow(grad):
    return grad_overflow(grad)


class FinetuneCell(nn.Cell):
    def __init__(self, network, optimizer, scale_update_cell=None):
        super().__init__(auto_prefix=False)
        self.network = network
        self.network.set_grad()
        self.weights = optimizer.parameters
        self.optimizer = optimizer
        self.cast = P.Cast()
        self.gpu_target = context.get_context("device_target") == "GPU"
        if self.gpu_target:
            self.float_status = P.FloatStatus()
            self.addn = P.AddN()
            self.reshape = P.Reshape()
        else:
            self.alloc_status = P.NPUAllocFloatStatus()
            self.get_status = P.NPUGetFloatStatus()
            self.clear_before_grad = P.NPUClearFloatStatus()
        self.reduce_sum = P.ReduceSum(keep_dims=False)
        self.base = Tensor(1, mstype.float32)
        self.less_equal = P.LessEqual()
        self.hyper_map = C.HyperMap()
        self.loss_scale = None
        self.loss_scaling_manager = scale_update_cell
        if scale_update_cell:
            self.loss_scale = Parameter(
                Tensor(scale_update_cell.get_loss_scale(), dtype=mstype.float32), name="loss_scale"
            )

    def construct(self, input_ids, label_ids, sens=None):
        weights = self.weights
        init = False
        loss = self.network(input_ids, label_ids)
        if sens is None:
            scaling_sens = self.loss_scale
        else:
            scaling_sens = sens
        if not self.gpu_target:
            init = self.alloc_status()
            init = F.depend(init, loss)
            clear_before_grad = self.clear_before_grad(init)
            scaling_sens = F.depend(scaling_sens, clear_before_grad)
        grads = ms.grad(self.network, None, weights, sens_param=True)(
            input_ids, label_ids, self.cast(scaling_sens, mstype.float32)
        )
        grads = self.hyper_map(F.partial(grad_scale, scaling_sens), grads)
        if not self.gpu_target:
            init = F.depend(init, grads)
            get_status = self.get_status(init)
            init = F.depend(init, get_status)
            flag_sum = self.reduce_sum(init, (0,))
        else:
            flag_sum = self.hyper_map(F.partial(_grad_overflow), grads)
            flag_sum = self.addn(flag_sum)
            flag_sum = self.reshape(flag_sum, (()))
        cond = self.less_equal(self.base, flag_sum)
        overflow = cond
        if sens is None:
            overflow = self.loss_scaling_manager(self.loss_scale, cond)
        if not overflow:
            self.optimizer(grads)
        return (loss, cond, scaling_sens)


class SquadCell(nn.TrainOneStepWithLossScaleCell):
    """The base class's own overflow check: MindSpore's get_overflow_status."""

    def __init__(self, network, optimizer, scale_update_cell=None):
        super().__init__(network, optimizer, scale_update_cell)
        self.cast = P.Cast()

    def construct(self, input_ids, label_ids, sens=None):
        weights = self.weights
        loss = self.network(input_ids, label_ids)
        if sens is None:
            scaling_sens = self.scale_sense
        else:
            scaling_sens = sens
        status, scaling_sens = self.start_overflow_check(loss, scaling_sens)
        grads = ms.grad(self.network, None, weights, sens_param=True)(
            input_ids, label_ids, self.cast(scaling_sens, mstype.float32)
        )
        grads = self.hyper_map(F.partial(grad_scale, scaling_sens), grads)
        cond = self.get_overflow_status(status, grads)
        overflow = self.process_loss_scale(cond)
        if not overflow:
            self.optimizer(grads)
        return (loss, cond, scaling_sens)

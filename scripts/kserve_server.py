#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""A KServe v2 inference server for one ONNX model, run by ONNX Runtime on the CPU.

It is the `kserve` Python package's own ModelServer (the KServe v2 / Open Inference Protocol
over gRPC and REST); this file loads the model, describes its tensors (so that clients get the
model's metadata) and keeps the server on one address (loopback by default). Used by the test
suite and the scale-out example:

    kserve_server.py --model coco_ssdlite_mobilenet_v2.onnx --name coco --grpc-port 8001

--delay-ms makes every answer that much later (a slow server, for tests); --tls-cert/--tls-key
serve gRPC over TLS (--tls-client-ca also asks clients for a certificate signed by that CA);
--require-header name=value refuses calls without that header.

--hostile MODE answers as a broken or hostile server would, for the reliability tests, after
--hostile-after good answers: huge-shape (the first output declares 10^12 values), nan (every
value NaN), oversized (an extra 32 MiB output), stall (never answers) or die (the process exits
in the middle of the call).
"""
import argparse
import asyncio
import logging
import os
import sys

import numpy as np
import onnxruntime as ort

ONNX_DATATYPES = {
    "tensor(float)": "FP32",
    "tensor(float16)": "FP16",
    "tensor(uint8)": "UINT8",
    "tensor(int8)": "INT8",
    "tensor(int32)": "INT32",
    "tensor(int64)": "INT64",
    "tensor(bool)": "BOOL",
    "tensor(double)": "FP64",
}
NUMPY_DATATYPES = {
    "float32": "FP32",
    "float16": "FP16",
    "uint8": "UINT8",
    "int8": "INT8",
    "int32": "INT32",
    "int64": "INT64",
    "bool": "BOOL",
    "float64": "FP64",
}


def describe(tensors):
    return [
        {
            "name": t.name,
            "datatype": ONNX_DATATYPES.get(t.type, t.type),
            "shape": [d if isinstance(d, int) and d > 0 else -1 for d in t.shape],
        }
        for t in tensors
    ]


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="the ONNX file")
    parser.add_argument("--name", required=True, help="the model's name on the server")
    parser.add_argument("--host", default="127.0.0.1", help="the address to listen on")
    parser.add_argument("--grpc-port", type=int, default=8001)
    parser.add_argument("--http-port", type=int, default=8000)
    parser.add_argument("--threads", type=int, default=0, help="ONNX Runtime threads")
    parser.add_argument("--delay-ms", type=int, default=0)
    parser.add_argument("--tls-cert", help="PEM certificate: serve gRPC over TLS")
    parser.add_argument("--tls-key", help="PEM key of --tls-cert")
    parser.add_argument("--tls-client-ca", help="PEM CA that client certificates must have")
    parser.add_argument("--require-header", help="name=value every call must carry")
    parser.add_argument(
        "--hostile", choices=["huge-shape", "nan", "oversized", "stall", "die"],
        help="answer as a broken server would (tests)",
    )
    parser.add_argument("--hostile-after", type=int, default=0,
                        help="good answers before --hostile starts")
    return parser.parse_args()


def read(path):
    with open(path, "rb") as f:
        return f.read()


def configure_grpc(args):
    """kserve binds every interface without TLS or checks: keep its servers on --host, and add
    the TLS and header options."""
    import grpc
    import grpc.aio
    import uvicorn

    host = args.host
    credentials = None
    if args.tls_cert:
        client_ca = read(args.tls_client_ca) if args.tls_client_ca else None
        credentials = grpc.ssl_server_credentials(
            [(read(args.tls_key), read(args.tls_cert))],
            root_certificates=client_ca,
            require_client_auth=client_ca is not None,
        )
    add_port = grpc.aio._server.Server.add_insecure_port

    def add_insecure_port(self, address):
        address = address.replace("[::]", host, 1)
        if credentials is not None:
            return self.add_secure_port(address, credentials)
        return add_port(self, address)

    grpc.aio._server.Server.add_insecure_port = add_insecure_port

    if args.require_header:
        name, value = args.require_header.split("=", 1)

        class RequireHeader(grpc.aio.ServerInterceptor):
            async def intercept_service(self, continuation, details):
                if (name.lower(), value) in tuple(details.invocation_metadata or ()):
                    return await continuation(details)

                async def deny(request, context):
                    await context.abort(grpc.StatusCode.UNAUTHENTICATED, f"header {name} required")

                return grpc.unary_unary_rpc_method_handler(deny)

        make_server = grpc.aio.server

        def server(*a, interceptors=(), **kw):
            return make_server(*a, interceptors=(RequireHeader(), *interceptors), **kw)

        grpc.aio.server = server

    config_init = uvicorn.Config.__init__

    def init(self, *args, **kwargs):
        kwargs["host"] = host
        config_init(self, *args, **kwargs)

    uvicorn.Config.__init__ = init


def main():
    args = parse_args()
    # kserve reads its own options from the command line when imported.
    limit = str(1 << 30)
    sys.argv = [sys.argv[0], "--grpc_max_send_message_length", limit,
                "--grpc_max_receive_message_length", limit]
    configure_grpc(args)
    from kserve import InferOutput, InferRequest, InferResponse, Model, ModelServer

    class OnnxModel(Model):
        def __init__(self):
            super().__init__(args.name)
            options = ort.SessionOptions()
            if args.threads:
                options.intra_op_num_threads = args.threads
            self.session = ort.InferenceSession(
                args.model, options, providers=["CPUExecutionProvider"]
            )
            self.answered = 0
            self.ready = True

        def get_input_types(self):
            return describe(self.session.get_inputs())

        def get_output_types(self):
            return describe(self.session.get_outputs())

        async def predict(self, payload: InferRequest, headers=None, response_headers=None):
            feeds = {i.name: i.as_numpy() for i in payload.inputs}
            if args.delay_ms:
                await asyncio.sleep(args.delay_ms / 1000.0)
            wanted = [o.name for o in self.session.get_outputs()]
            results = await asyncio.get_running_loop().run_in_executor(
                None, lambda: self.session.run(wanted, feeds)
            )
            hostile = args.hostile if self.answered >= args.hostile_after else None
            self.answered += 1
            if hostile == "stall":
                await asyncio.sleep(3600)
            if hostile == "die":
                os._exit(3)
            outputs = []
            for index, (name, value) in enumerate(zip(wanted, results)):
                value = np.ascontiguousarray(value)
                if hostile == "nan" and value.dtype.kind == "f":
                    value = np.full_like(value, np.nan)
                shape = list(value.shape)
                if hostile == "huge-shape" and index == 0:
                    shape = [1, 10**12]
                out = InferOutput(
                    name=name, shape=list(value.shape), datatype=NUMPY_DATATYPES[value.dtype.name]
                )
                out.set_data_from_numpy(value, binary_data=True)
                # Declared after the data, which kserve checks against the shape.
                out.shape = shape
                outputs.append(out)
            if hostile == "oversized":
                padding = np.zeros(8 << 20, dtype=np.float32)
                out = InferOutput(name="padding", shape=list(padding.shape), datatype="FP32")
                out.set_data_from_numpy(padding, binary_data=True)
                outputs.append(out)
            return InferResponse(
                model_name=self.name, infer_outputs=outputs, response_id=payload.id
            )

    logging.basicConfig(level=logging.WARNING)
    ModelServer(
        http_port=args.http_port, grpc_port=args.grpc_port, workers=1, enable_grpc=True
    ).start([OnnxModel()])


if __name__ == "__main__":
    main()

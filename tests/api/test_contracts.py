"""The three contracts (OpenAPI, GraphQL, proto) mirror exactly the routes the API serves."""

from __future__ import annotations

import importlib.util
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
import yaml
from graphql import build_schema, validate_schema
from graphql.language import StringValueNode

from llm_observe.api.app import ROUTES, create_app
from tests.api.conftest import make_collector

CONTRACTS = resources.files("llm_observe.api") / "contracts"
HTTP_METHODS = {"get", "post", "put", "patch", "delete"}

Route = tuple[str, str]


def served_routes() -> dict[Route, str]:
    """(METHOD, path) of every route of a real app (HEAD excluded) -> handler name."""
    app = create_app(make_collector())
    routes = {}
    for route in app.router.routes():
        if route.method != "HEAD":
            routes[(route.method, route.resource.canonical)] = route.handler.__name__
    return routes


def openapi_routes() -> dict[Route, str]:
    doc = yaml.safe_load((CONTRACTS / "v1.yaml").read_text())
    return {(method.upper(), path): op["operationId"]
            for path, ops in doc["paths"].items()
            for method, op in ops.items() if method in HTTP_METHODS}


def graphql_routes() -> dict[Route, str]:
    schema = build_schema((CONTRACTS / "v1.graphql").read_text())
    assert validate_schema(schema) == []
    routes: dict[Route, str] = {}
    for root in (schema.query_type, schema.mutation_type):
        assert root is not None
        for name, field in root.fields.items():
            assert field.ast_node is not None
            (rest,) = [d for d in field.ast_node.directives if d.name.value == "rest"]
            args = {a.name.value: a.value for a in rest.arguments}
            method, path = args["method"], args["path"]
            assert isinstance(method, StringValueNode) and isinstance(path, StringValueNode)
            routes[(method.value, path.value)] = name
    return routes


def compile_proto(out: Path) -> Any:
    """Compile the proto with grpcio-tools and import the generated module."""
    import grpc_tools
    from grpc_tools import protoc

    include = Path(grpc_tools.__file__).parent / "_proto"
    proto = Path(str(CONTRACTS / "instrumentation.proto"))
    code = protoc.main(["protoc", f"-I{proto.parent}", f"-I{include}", f"--python_out={out}",
                        f"--grpc_python_out={out}", str(proto)])
    assert code == 0, "protoc failed on instrumentation.proto"
    assert (out / "instrumentation_pb2_grpc.py").exists()
    spec = importlib.util.spec_from_file_location("instrumentation_pb2",
                                                  out / "instrumentation_pb2.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.pop("instrumentation_pb2", None)
    spec.loader.exec_module(module)
    return module


def proto_routes(module: Any) -> dict[Route, str]:
    routes: dict[Route, str] = {}
    for service in module.DESCRIPTOR.services_by_name.values():
        for method in service.methods:
            rest = method.GetOptions().Extensions[module.rest]
            assert rest.method and rest.path, f"{method.full_name} has no (rest) option"
            routes[(rest.method, rest.path)] = method.name
    return routes


def test_routes_table_is_what_the_app_serves() -> None:
    assert set(served_routes()) == {(m, p) for m, p, _ in ROUTES}
    assert len(ROUTES) == len({(m, p) for m, p, _ in ROUTES})


@pytest.mark.parametrize("contract", ["openapi", "graphql"])
def test_contract_has_every_served_route_and_nothing_else(contract: str) -> None:
    served = set(served_routes())
    documented = set(openapi_routes() if contract == "openapi" else graphql_routes())
    assert served - documented == set(), f"served but missing from {contract}"
    assert documented - served == set(), f"in {contract} but not served"


def test_proto_compiles_and_mirrors_every_route(tmp_path: Path) -> None:
    routes = proto_routes(compile_proto(tmp_path))
    served = set(served_routes())
    assert served - set(routes) == set(), "served but missing from the proto"
    assert set(routes) - served == set(), "in the proto but not served"


def test_operation_names_agree_across_contracts(tmp_path: Path) -> None:
    openapi = openapi_routes()
    graphql = graphql_routes()
    proto = proto_routes(compile_proto(tmp_path))
    for route, operation_id in openapi.items():
        assert graphql[route] == operation_id
        assert proto[route] == operation_id[0].upper() + operation_id[1:]


def test_every_operation_documents_its_errors() -> None:
    doc = yaml.safe_load((CONTRACTS / "v1.yaml").read_text())
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            codes = set(op["responses"])
            assert "200" in codes, (method, path)
            if path != "/v1/metrics/health":
                assert "401" in codes, (method, path)
            if "requestBody" in op:
                assert {"400", "413", "415", "422"} <= codes, (method, path)
